/** Task functions for worker processes in the NATS tests (`--functions tests/support/cluster-tasks.ts`). */
export const inc = (x: number): number => x + 1;
export const add = (...xs: number[]): number => xs.reduce((a, b) => a + b, 0);
export const double = (x: number): number => 2 * x;
export const fail = (message: string): never => {
  throw new Error(message);
};

export async function slowInc(x: number, ms = 10): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, ms));
  return x + 1;
}

/** A typed array of `n` float64s, element i = i * scale. */
export function ramp(n: number, scale = 1): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = i * scale;
  return out;
}

export function total(values: Float64Array | number[]): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum;
}

export function describe(values: Float64Array): { type: string; length: number; first: number; last: number } {
  return { type: values.constructor.name, length: values.length, first: values[0]!, last: values[values.length - 1]! };
}

/** Takes its worker process down, as a segfaulting native library would. */
export function crash(): never {
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable");
}

export default { inc, add, double, fail, slowInc, ramp, total, describe, crash };
