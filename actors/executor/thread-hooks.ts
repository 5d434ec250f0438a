/**
 * Module hooks an executor thread must register to import what this process can. Node 20
 * does not carry hooks registered by `--import tsx` into worker threads, so under tsx a
 * thread could not import a `.ts` module of task functions: it registers tsx's hooks itself.
 * Undefined when the process does not run under tsx (the built `dist/`, plain `.js` modules).
 */
export function threadHooks(): string | undefined {
  if (!process.execArgv.some((arg) => /(^|[\\/=\s])tsx([\\/]|$)/.test(arg))) return undefined;
  try {
    return import.meta.resolve("tsx/esm/api");
  } catch {
    return undefined;
  }
}
