/**
 * One benchmark case in a fresh process: `node --expose-gc --import tsx bench/child.ts '<case json>'`.
 * bench/run.ts starts it; the result rows come back on one stdout line prefixed RESULT_MARK.
 */
import { runCase, type Case } from "./workloads.js";

export const RESULT_MARK = "@@natsched-bench-result ";

const c = JSON.parse(process.argv[2] ?? "null", (_k, v: unknown) => (v === "Infinity" ? Infinity : v)) as Case;
try {
  const rows = await runCase(c);
  process.stdout.write(RESULT_MARK + JSON.stringify({ rows }) + "\n");
  process.exit(0);
} catch (error) {
  process.stdout.write(RESULT_MARK + JSON.stringify({ error: String((error as Error)?.stack ?? error) }) + "\n");
  process.exit(1);
}
