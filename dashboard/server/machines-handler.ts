/**
 * `GET /api/machines[?seq=N | ?t=S]`: every machine definition as a graph (machine-graph.ts),
 * with the instances in each state and the times each edge was taken, over the log up to
 * the cut (the cut `replay --until` makes: a scheduler seq, or seconds from the run's start).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { BadOptionError } from "../../machines/errors.js";
import type { LogRecord } from "../../log/types.js";
import { LogCut, type CutSpec } from "../../replay/log-cut.js";
import { graphOf, MACHINE_DEFINITIONS } from "./machine-graph.js";
import { edgeKey, MachineTally } from "./machine-tally.js";
import type { MachinesView, MachineView } from "./machines-wire.js";
import { sendBadRequest, sendJson, type RecordSource } from "./views-http.js";

/** The machines over `records`, up to `cut` (the whole log without one). */
export async function machinesView(records: AsyncIterable<LogRecord> | Iterable<LogRecord>, cut?: CutSpec): Promise<MachinesView> {
  const logCut = new LogCut(cut);
  const tally = new MachineTally();
  let read = 0;
  for await (const record of records) {
    const verdict = logCut.admit(record);
    if (verdict === "end") break;
    if (verdict === "skip") continue;
    read += 1;
    if (record.kind === "transition") tally.add(record);
  }
  return { machines: MACHINE_DEFINITIONS.map(({ machine, title }) => viewOf(graphOf(machine), title, tally)), records: read, cut: logCut.describe() };
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

/** The cut a request names: `seq` (the scheduler's record number) or `t` (seconds from the run's start); none: the whole log. */
export function cutOfQuery(query: URLSearchParams): CutSpec | undefined {
  const seq = query.get("seq");
  const t = query.get("t");
  if (seq !== null && t !== null) throw new BadOptionError("seq", "give seq or t, not both");
  if (seq !== null) {
    if (!/^\d+$/.test(seq)) throw new BadOptionError("seq", `a record number (0, 1, 2...), got ${JSON.stringify(seq)}`);
    return { kind: "seq", value: Number(seq) };
  }
  if (t !== null) {
    const value = Number(t);
    if (t.trim() === "" || !Number.isFinite(value) || value < 0) throw new BadOptionError("t", `seconds from the run's start (0 or more), got ${JSON.stringify(t)}`);
    return { kind: "elapsed", value };
  }
  return undefined;
}

export async function handleMachines(req: IncomingMessage, res: ServerResponse, records: RecordSource): Promise<void> {
  let cut: CutSpec | undefined;
  try {
    cut = cutOfQuery(new URL(req.url ?? "/", "http://localhost").searchParams);
  } catch (error) {
    sendBadRequest(res, error);
    return;
  }
  sendJson(res, 200, await machinesView(records(), cut));
}
