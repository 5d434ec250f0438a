/** Task functions are registered by name on workers: functions cannot travel over a wire. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type TaskFunction = (...args: any[]) => unknown;
export type TaskFunctions = Readonly<Record<string, TaskFunction>>;

/** Functions every worker has: literal values in a graph become `natsched.identity` tasks. */
export const BUILTIN_FUNCTIONS: TaskFunctions = Object.freeze({
  "natsched.identity": (value: unknown) => value,
});

export function withBuiltins(functions: TaskFunctions): TaskFunctions {
  return { ...BUILTIN_FUNCTIONS, ...functions };
}
