/**
 * `GET /api/machines[?index=N | ?seq=N | ?t=S]`: every machine definition as a graph
 * (machine-graph.ts), with the instances in each state and the times each edge was taken,
 * over the log up to the cut (the cuts GET /api/at takes: records in log order, or the cut
 * `replay --until` makes at a seq or at seconds from the run's start).
 */
import { BadOptionError } from "../../machines/errors.js";
import type { LogRecord } from "../../log/types.js";
import { LogCut, parseCut } from "../../replay/log-cut.js";
import { graphOf, MACHINE_DEFINITIONS } from "./machine-graph.js";
import { MachineTally } from "./machine-tally.js";
import type { MachinesView, MachineView } from "./machines-wire.js";
import type { DashCut } from "./model.js";
import type { Handler } from "./route-types.js";
import { safeJson, typedProblem } from "./views-reply.js";

/** The machines over `records`, up to `cut` (the whole log without one). */
export function machinesView(records: readonly LogRecord[], cut?: DashCut): MachinesView {
  if (cut === undefined || "index" in cut) {
    const n = Math.max(0, Math.min(records.length, Math.floor(cut?.index ?? records.length)));
    const cutText = cut === undefined ? "at the end of the log" : `after record ${n} in log order`;
    return viewsOf(prefixTally(records, n), n, cutText);
  }
  const logCut = new LogCut(cut.spec);
  const tally = new MachineTally();
  let read = 0;
  for (const record of records) {
    const verdict = logCut.admit(record);
    if (verdict === "end") break;
    if (verdict === "skip") continue;
    read += 1;
    if (record.kind === "transition") tally.add(record);
  }
  return viewsOf(tally, read, logCut.describe());
}

function viewsOf(tally: MachineTally, records: number, cut: string): MachinesView {
  return { machines: MACHINE_DEFINITIONS.map(({ machine, title }) => viewOf(graphOf(machine), title, tally)), records, cut };
}

/**
 * The tally of the first `n` records, carried on from the last one asked of the same array:
 * a live cluster's refreshes and a scrubber stepping forward read only the records since.
 * (A live model's array is a new one once it drops its oldest records: counted afresh.)
 */
const prefixes = new WeakMap<readonly LogRecord[], { n: number; tally: MachineTally }>();

function prefixTally(records: readonly LogRecord[], n: number): MachineTally {
  let kept = prefixes.get(records);
  if (kept === undefined || kept.n > n) prefixes.set(records, (kept = { n: 0, tally: new MachineTally() }));
  for (let i = kept.n; i < n; i++) {
    const record = records[i]!;
    if (record.kind === "transition") kept.tally.add(record);
  }
  kept.n = n;
  return kept.tally;
}

function viewOf(graph: ReturnType<typeof graphOf>, title: string, tally: MachineTally): MachineView {
  const { instances, byState } = tally.counts(graph.id);
  const onGraph = new Set(graph.edges.map((e) => `${e.from}\t${e.event}\t${e.to}`));
  return {
    id: graph.id,
    title,
    states: graph.states.map((state) => ({ ...state, count: byState.get(state.id) ?? 0 })),
    edges: graph.edges.map((edge) => ({ ...edge, taken: tally.taken(graph.id, edge.from, edge.event, edge.to) })),
    instances,
    offGraph: tally.edges(graph.id).filter((e) => !onGraph.has(`${e.from}\t${e.event}\t${e.to}`)),
  };
}

/**
 * The cut a request names, as GET /api/at takes it: `index` (the first N records in log
 * order), `seq` (the scheduler's record N, or actor:N) or `t` (seconds from the run's
 * start); none: the whole log.
 */
export function cutOfQuery(query: URLSearchParams): DashCut | undefined {
  const given = ["index", "seq", "t"].filter((name) => query.has(name));
  if (given.length > 1) throw new BadOptionError(given[1]!, `give one of index, seq and t, got ${given.join(" and ")}`);
  const index = query.get("index");
  const seq = query.get("seq");
  const t = query.get("t");
  if (index !== null) {
    if (!/^\d+$/.test(index)) throw new BadOptionError("index", `a number of records (0, 1, 2...), got ${JSON.stringify(index)}`);
    return { index: Number(index) };
  }
  if (seq !== null) {
    if (!/^(.+:)?\d+$/.test(seq)) throw new BadOptionError("seq", `a record number (1234) or an actor and record number (worker.a:40), got ${JSON.stringify(seq)}`);
    return { spec: parseCut(seq, "seq") };
  }
  if (t !== null) {
    const value = Number(t);
    if (t.trim() === "" || !Number.isFinite(value) || value < 0) throw new BadOptionError("t", `seconds from the run's start (0 or more), got ${JSON.stringify(t)}`);
    return { spec: { kind: "elapsed", value } };
  }
  return undefined;
}

export const machinesHandler: Handler = async ({ model, url }) => {
  let cut: DashCut | undefined;
  try {
    cut = cutOfQuery(url.searchParams);
  } catch (error) {
    return typedProblem(error);
  }
  await model.whenLoaded();
  // A live model that reads its records from its log file carries its counts on as asked.
  const whole = cut === undefined ? model.wholeMachines() : undefined;
  if (whole !== undefined) {
    const { tally, records, dropped } = await whole;
    const view = viewsOf(tally, records, "at the end of the log");
    if (dropped > 0) view.partial = `counts of the ${records} records since the dashboard first counted them (the ${dropped} records before them are in the log)`;
    return safeJson(view);
  }
  const { records, dropped } = await model.kept();
  const view = machinesView(records, cut);
  if (dropped > 0) view.partial = `the dashboard keeps the latest ${records.length} records: counts are of those (${dropped} records before them are in the log)`;
  return safeJson(view);
};
