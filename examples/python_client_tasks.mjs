/**
 * The task functions examples/python_client.py's graph calls, for its workers:
 * `natsched worker --functions examples/python_client_tasks.mjs`.
 */

export const inc = (x) => x + 1;

export const add = (...xs) => xs.reduce((a, b) => a + b, 0);

/** An error as a library throws one: a class of its own and a stable code. */
class ValidationError extends Error {
  name = "ValidationError";

  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

/** Its argument, if it is not negative. */
export function checkNonNegative(x) {
  if (x < 0) throw new ValidationError(`${x} is negative`, "NEGATIVE");
  return x;
}
