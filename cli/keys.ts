import { BadOptionError } from "../machines/errors.js";
import { openLogAt } from "../log/jetstream-open.js";
import { LogCut, parseCut } from "../replay/log-cut.js";
import { ClusterFold } from "../log/cluster-fold.js";
import { checkTaskState, listKeys } from "../tools/keys.js";
import { TimeBase } from "../log/time-base.js";
import { LOG_NATS_USAGE, NATS_AUTH_FLAGS, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

const DEFAULT_LIMIT = 50;

export const USAGE = `usage: natsched keys <log> [--prefix <p>] [--state <state>] [--at <cut>] [--limit <n>] [--json]
  the scheduler's task keys, with each one's state, worker and function, sorted by key
  --prefix <p>     only keys starting with p (natsched story takes such a prefix too)
  --state <state>  only tasks in this state (memory, erred, queued, processing, processing.stealing, ...)
  --at <cut>       as of this cut (as natsched inspect --at / replay --until; default: the end)
  --limit <n>      at most n keys (default ${DEFAULT_LIMIT}; all are counted)
  --json           print the keys as JSON
${LOG_NATS_USAGE}`;

/** `natsched keys`: exit 0 with the keys found (none is not an error), 1 on an unreadable log, 2 on bad usage. */
export async function keysCommand(args: string[], io: Io): Promise<number> {
  let parsed;
  let cut: LogCut;
  let limit = DEFAULT_LIMIT;
  try {
    parsed = parseFlags(args, { ...NATS_AUTH_FLAGS, prefix: { type: "string" }, state: { type: "string" }, at: { type: "string" }, limit: { type: "string" }, json: { type: "boolean" } }, true);
    if (parsed.positionals.length !== 1) throw new BadOptionError("log", "give exactly one log");
    cut = new LogCut(parsed.values.at === undefined ? undefined : parseCut(parsed.values.at, "--at"));
    if (parsed.values.state !== undefined) checkTaskState(parsed.values.state);
    if (parsed.values.limit !== undefined) {
      if (!/^\d+$/.test(parsed.values.limit) || Number(parsed.values.limit) < 1) throw new BadOptionError("--limit", `--limit takes a whole number >= 1, got "${parsed.values.limit}"`);
      limit = Number(parsed.values.limit);
    }
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched keys: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const path = positionals[0]!;
  const reader = await openLogAt(path, natsOptions(values));
  const fold = new ClusterFold();
  let first: number | undefined;
  for await (const record of reader.records()) {
    first ??= record.t;
    const verdict = cut.admit(record);
    if (verdict === "end") break;
    if (verdict === "take") fold.add(record);
  }
  for (const problem of reader.problems) io.err(`warning: ${problem.kind}: ${problem.message}`);
  const time = TimeBase.of(first, reader.header.created);
  const { rows, total } = listKeys(fold, { ...(values.prefix !== undefined ? { prefix: values.prefix } : {}), ...(values.state !== undefined ? { state: values.state } : {}), limit });
  if (values.json) {
    io.out(JSON.stringify({ cut: cut.describe(), start: time.start, ...(time.iso ? { startIso: time.iso } : {}), total, keys: rows.map((r) => ({ ...r, since: time.since(r.t) })) }, null, 2));
    return 0;
  }
  io.out(`${total} key(s) ${cut.describe()}${values.prefix !== undefined ? ` starting with ${JSON.stringify(values.prefix)}` : ""}${values.state !== undefined ? ` in ${values.state}` : ""}${total > rows.length ? `, the first ${rows.length} (--limit)` : ""}`);
  if (rows.length === 0) return 0;
  io.out(time.describe());
  const keyWidth = Math.max(3, ...rows.map((r) => r.key.length));
  const stateWidth = Math.max(5, ...rows.map((r) => r.state.length));
  const workerWidth = Math.max(6, ...rows.map((r) => (r.worker ?? "-").length));
  io.out(`  ${"key".padEnd(keyWidth)}  ${"state".padEnd(stateWidth)}  ${"worker".padEnd(workerWidth)}  ${"since".padStart(11)}  function`);
  for (const r of rows) io.out(`  ${r.key.padEnd(keyWidth)}  ${r.state.padEnd(stateWidth)}  ${(r.worker ?? "-").padEnd(workerWidth)}  ${time.at(r.t, 3).padStart(11)}  ${r.func ?? "-"}`);
  return 0;
}
