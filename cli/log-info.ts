import { BadOptionError } from "../machines/errors.js";
import { isJetStreamLocation, openLogAt } from "../log/jetstream-open.js";
import { openProblems } from "../replay/open-problems.js";
import { isSliceHeader } from "../log/slice-header.js";
import { TimeBase } from "../log/time-base.js";
import { LOG_NATS_USAGE, NATS_AUTH_FLAGS, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import { printHostMetrics } from "./log-metrics.js";
import type { Io } from "./run.js";

export const USAGE = `usage: natsched log <log> [--open-ok]   (a file, or nats://host:port/<cluster>)
       natsched log <log> --metrics [--json]
       natsched log export <from> <to>
  --metrics   the workers' memory (rss, heap) and event-loop delay (p99, max since the
              previous heartbeat) as the scheduler recorded them, rate-limited
  --open-ok   accept an open log: one still being written, whose actors have not all written
              their stop record (without it, each is an "open" problem and the exit is 1: the
              writer crashed, was killed, or is still writing). A nats:// log is accepted
              open without the flag (a live cluster writes it)
${LOG_NATS_USAGE}`;

/** ", written by natsched 0.1.0 (commit 0898064b9a0f) on node v20.20.2", from what the header says. */
function writtenBy(meta: Record<string, unknown>): string {
  if (typeof meta.natsched !== "string") return "";
  const commit = typeof meta.commit === "string" ? ` (commit ${meta.commit.slice(0, 12)})` : "";
  const node = typeof meta.node === "string" ? ` on node ${meta.node}` : "";
  return `, written by natsched ${meta.natsched}${commit}${node}`;
}

export async function logInfoCommand(args: string[], io: Io): Promise<number> {
  let parsed;
  try {
    parsed = parseFlags(args, { ...NATS_AUTH_FLAGS, help: { type: "boolean", short: "h" }, "open-ok": { type: "boolean" }, metrics: { type: "boolean" }, json: { type: "boolean" } }, true);
    if (parsed.values.help) {
      io.out(USAGE);
      return 0;
    }
    if (parsed.positionals.length !== 1) throw new BadOptionError("log", "give exactly one log");
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched log: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  const path = parsed.positionals[0]!;
  const reader = await openLogAt(path, natsOptions(parsed.values));
  if (parsed.values.metrics === true) return printHostMetrics(reader, parsed.values.json === true, io);
  // A live cluster's JetStream log is open by nature, and a slice (natsched export) by construction.
  const openOk = parsed.values["open-ok"] === true || isJetStreamLocation(path) || isSliceHeader(reader.header);
  /** Actors whose latest start record has no stop record after it, with that start's seq. */
  const open = new Map<string, number>();
  const perActor = new Map<string, { records: number; inputs: number; transitions: number; first: number; last: number }>();
  let runStart: number | undefined;
  for await (const r of reader.records()) {
    runStart ??= r.t;
    let a = perActor.get(r.actor);
    if (a === undefined) perActor.set(r.actor, (a = { records: 0, inputs: 0, transitions: 0, first: r.t, last: r.t }));
    a.records++;
    if (r.kind === "start") open.set(r.actor, r.seq);
    else if (r.kind === "stop") open.delete(r.actor);
    if (r.kind === "input") a.inputs++;
    if (r.kind === "transition") a.transitions++;
    a.first = Math.min(a.first, r.t);
    a.last = Math.max(a.last, r.t);
  }
  io.out(`${path}: format v${reader.header.v}${writtenBy(reader.header.meta)}`);
  const time = TimeBase.of(runStart, reader.header.created);
  if (runStart !== undefined) io.out(`  ${time.describe()}`);
  for (const [actor, a] of [...perActor].sort()) {
    io.out(`  ${actor.padEnd(24)} ${String(a.records).padStart(9)} records  ${String(a.inputs).padStart(8)} inputs  ${String(a.transitions).padStart(8)} transitions  ${(a.last - a.first).toFixed(3)} s, ${time.at(a.first, 3)} to ${time.at(a.last, 3)}`);
  }
  const problems: { kind: string; line?: number; message: string }[] = [...reader.problems];
  if (!openOk) problems.push(...openProblems(open));
  io.out(problems.length === 0 ? "  no problems" : `  ${problems.length} problem(s):`);
  for (const p of problems) io.out(`    ${p.kind}${p.line !== undefined ? ` at line ${p.line}` : ""}: ${p.message}`);
  return problems.length === 0 ? 0 : 1;
}
