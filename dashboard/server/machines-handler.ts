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
import { edgeKey, MachineTally } from "./machine-tally.js";
import type { MachinesView, MachineView } from "./machines-wire.js";
import type { DashCut } from "./model.js";
import type { Handler } from "./route-types.js";
import { safeJson, typedProblem } from "./views-reply.js";

/** The machines over `records`, up to `cut` (the whole log without one). */
export async function machinesView(records: AsyncIterable<LogRecord> | Iterable<LogRecord>, cut?: DashCut): Promise<MachinesView> {
  const byIndex = cut !== undefined && "index" in cut ? cut.index : undefined;
  const logCut = new LogCut(cut !== undefined && "spec" in cut ? cut.spec : undefined);
  const tally = new MachineTally();
  let read = 0;
  let seen = 0;
  for await (const record of records) {
    if (byIndex !== undefined && seen >= byIndex) break;
    seen += 1;
    const verdict = logCut.admit(record);
    if (verdict === "end") break;
    if (verdict === "skip") continue;
    read += 1;
    if (record.kind === "transition") tally.add(record);
  }
  const described = byIndex !== undefined ? `after record ${seen} in log order` : logCut.describe();
  return { machines: MACHINE_DEFINITIONS.map(({ machine, title }) => viewOf(graphOf(machine), title, tally)), records: read, cut: described };
}

function viewOf(graph: ReturnType<typeof graphOf>, title: string, tally: MachineTally): MachineView {
  const { at, taken } = tally.of(graph.id);
  const counts = tally.counts(graph.id);
  const onGraph = new Set<string>();
  const edges = graph.edges.map((edge) => {
    const key = edgeKey(edge.from, edge.event, edge.to);
    onGraph.add(key);
    return { ...edge, taken: taken.get(key) ?? 0 };
  });
  const offGraph = [...taken]
    .filter(([key]) => !onGraph.has(key))
    .map(([key, n]) => {
      const [from, event, to] = key.split("\t") as [string, string, string];
      return { from, event, to, taken: n };
    });
  return {
    id: graph.id,
    title,
    states: graph.states.map((state) => ({ ...state, count: counts.get(state.id) ?? 0 })),
    edges,
    instances: at.size,
    offGraph,
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
  const { records, dropped } = model.kept();
  const view = await machinesView(records, cut);
  if (dropped > 0) view.partial = `the dashboard keeps the latest ${records.length} records: counts are of those (${dropped} records before them are in the log)`;
  return safeJson(view);
};
