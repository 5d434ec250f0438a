/**
 * Snapshots of every actor's core at a position of a log, for a slice that starts there
 * (tools/export.ts): the log replayed (every transition checked) from its beginning, and
 * each actor running at `position` snapshotted between two of its inputs: just before its
 * first record at or after `position` that is not a transition, so the snapshot holds every
 * transition of the input before it. The scan stops once all of them are taken.
 */
import { deflateRawSync } from "node:zlib";
import { LogCorruptError } from "../machines/errors.js";
import { snapshotCore } from "../log/core-snapshot.js";
import type { AnyCore } from "../log/core-snapshot-format.js";
import type { SliceStart } from "../log/slice-header.js";
import type { LogProblem, LogRecord } from "../log/types.js";
import { ReplayEngine } from "./replay-engine.js";
import { scanLogFile, type ScanHandler } from "./replay-scan.js";
import type { TransitionLine } from "./transition-line.js";

export async function coreSnapshotsAt(path: string, position: number): Promise<Map<string, SliceStart>> {
  const engine = new ReplayEngine({});
  const inits = new Map<string, { role: string; init: Record<string, unknown> }>();
  const taken = new Map<string, SliceStart>();
  const skipped = new Set<string>();
  /** The actors running at `position`, once it is reached. */
  let running: Set<string> | undefined;
  let at = 0;
  const take = (actor: string): void => {
    const run = engine.runs.get(actor);
    const start = inits.get(actor);
    // A client's core has no snapshot format: a slice from a snapshot leaves clients out (tools/export.ts).
    if (start?.role === "client") {
      skipped.add(actor);
      return;
    }
    if (run === undefined || run.host === null || start === undefined || !run.active || run.pending > 0) {
      const why = run?.summary.divergence?.message ?? run?.summary.halted?.reason ?? "it does not replay clean there";
      throw new LogCorruptError(`${path}: cannot snapshot ${actor} at record ${position}: ${why}`);
    }
    taken.set(actor, { role: start.role, init: start.init, seq: run.summary.lastSeq, core: deflateRawSync(snapshotCore(run.host.core as AnyCore)).toString("base64") });
  };
  const handler: ScanHandler = {
    problem(problem: LogProblem) {
      engine.problem(problem);
    },
    record(record: LogRecord) {
      if (at++ >= position) {
        running ??= new Set(engine.open.keys());
        if (record.kind !== "transition" && running.has(record.actor) && !taken.has(record.actor) && !skipped.has(record.actor)) {
          take(record.actor);
          if (taken.size + skipped.size === running.size) return false;
        }
      }
      if (record.kind === "start") inits.set(record.actor, { role: record.role, init: record.init });
      return engine.record(record);
    },
    transitionLine(line: TransitionLine, actor: string) {
      at++;
      return engine.transitionLine(line, actor);
    },
  };
  await scanLogFile(path, handler);
  // Actors with no input after `position`: as they stand at the end.
  for (const actor of running ?? engine.open.keys()) if (!taken.has(actor) && !skipped.has(actor)) take(actor);
  return taken;
}
