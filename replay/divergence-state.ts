/**
 * The state diff of a divergence: the diverging actor replayed again, alone, up to the
 * input that diverged; the instances both transitions name (and, for a scheduler task,
 * the workers it is processing on) pictured before and after that input.
 */
import { buildHost, type ReplayHost } from "./replay-cores.js";
import { diffValues } from "./replay-diff.js";
import { scanLogFile, scanRecordSource, type ScanHandler } from "./replay-scan.js";
import type { Divergence, InstanceDiff } from "./replay-types.js";
import type { LogRecord } from "../log/types.js";

const NO_EFFECTS = { transition: () => undefined, sent: () => undefined };

type Instance = { machine: string; id: string };

export async function divergenceState(source: string | readonly LogRecord[], divergence: Divergence): Promise<InstanceDiff[]> {
  let host: ReplayHost | null = null;
  let diffs: InstanceDiff[] = [];
  const handler: ScanHandler = {
    problem: () => undefined,
    transitionLine: () => true,
    record: (record) => {
      if (record.actor !== divergence.actor || record.kind === "transition") return true;
      if (record.seq === divergence.seq) {
        // A start record diverges with the fresh core's own transitions: picture that core.
        if (record.kind === "start") host = buildHost(record, NO_EFFECTS);
        diffs = around(host, divergence, () => {
          if (record.kind === "input") host?.handle(record.event);
        });
        return false;
      }
      if (record.kind === "start") host = buildHost(record, NO_EFFECTS);
      else if (record.kind === "input") feed(host, record.event);
      return true;
    },
  };
  if (typeof source === "string") await scanLogFile(source, handler);
  else await scanRecordSource(source, handler);
  return diffs;
}

function feed(host: ReplayHost | null, event: { op: string }): void {
  try {
    host?.handle(event);
  } catch {
    // The first pass reported it; the state after it is what the live actor had too.
  }
}

function around(host: ReplayHost | null, divergence: Divergence, apply: () => void): InstanceDiff[] {
  if (host === null) return [];
  const named = instances(divergence);
  const before = named.map((i) => host.snapshot(i.machine, i.id));
  // A task's worker matters to most task decisions: every worker is pictured before the
  // input, and those the tasks are processing on before or after it are shown.
  const workersBefore = new Map<string, unknown>();
  if (host.role === "scheduler") for (const name of host.core.workers.keys()) workersBefore.set(name, host.snapshot("worker", name));
  try {
    apply();
  } catch {
    // As in `feed`.
  }
  const after = named.map((i) => host.snapshot(i.machine, i.id));
  const out: InstanceDiff[] = named.map((i, k) => diff(i, before[k], after[k]));
  if (host.role !== "scheduler") return out;
  const shown = new Set(named.filter((i) => i.machine === "worker").map((i) => i.id));
  for (const snapshot of [...before, ...after]) {
    const on = (snapshot as { processingOn?: unknown } | undefined)?.processingOn;
    if (typeof on !== "string" || shown.has(on)) continue;
    shown.add(on);
    out.push(diff({ machine: "worker", id: on }, workersBefore.get(on), host.snapshot("worker", on)));
  }
  return out;
}

function instances(divergence: Divergence): Instance[] {
  const out: Instance[] = [];
  for (const t of [divergence.recorded, divergence.reproduced]) {
    if (t !== null && !out.some((i) => i.machine === t.machine && i.id === t.id)) out.push({ machine: t.machine, id: t.id });
  }
  return out;
}

function diff(instance: Instance, before: unknown, after: unknown): InstanceDiff {
  return { ...instance, before, after, changes: diffValues(before, after) };
}
