/**
 * Module hooks an executor thread must register to import what this process can. Node 20
 * does not carry hooks registered by `--import tsx` into worker threads, so under tsx a
 * thread could not import a `.ts` module of task functions: it registers tsx's hooks itself.
 * Undefined when the process does not run under tsx (the built `dist/`, plain `.js` modules).
 * Under tsx means `--import tsx` (or `--loader tsx`) on the command line, or tsx registered
 * through its API by `bin/natsched.mjs` in a clone, which says so with `TSX_REGISTERED`.
 */
export const TSX_REGISTERED = Symbol.for("natsched.tsx-registered");

export function threadHooks(): string | undefined {
  const viaApi = (globalThis as Record<symbol, unknown>)[TSX_REGISTERED] === true;
  if (!viaApi && !process.execArgv.some((arg) => /(^|[\\/=\s])tsx([\\/]|$)/.test(arg))) return undefined;
  try {
    return import.meta.resolve("tsx/esm/api");
  } catch {
    return undefined;
  }
}
