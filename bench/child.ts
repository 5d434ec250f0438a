/**
 * One benchmark case in a fresh process: `node --expose-gc --import tsx bench/child.ts '<case json>'`.
 * bench/run.ts starts it; the result rows come back on one stdout line prefixed RESULT_MARK.
 */
import { runCase, type Case } from "./workloads.js";

export const RESULT_MARK = "@@natsched-bench-result ";

const c = JSON.parse(process.argv[2] ?? "null", (_k, v: unknown) => (v === "Infinity" ? Infinity : v)) as Case;
/** Exits once `line` is written: stdout to a pipe is asynchronous, and exiting at once cut a long result short. */
function finish(line: string, code: number): void {
  process.stdout.write(line + "\n", () => process.exit(code));
}

try {
  const rows = await runCase(c);
  finish(RESULT_MARK + JSON.stringify({ rows }), 0);
} catch (error) {
  finish(RESULT_MARK + JSON.stringify({ error: String((error as Error)?.stack ?? error) }), 1);
}
