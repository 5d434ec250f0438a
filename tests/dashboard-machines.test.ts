/**
 * The machines view: graphs read from the XState definitions (every state and edge, checked
 * against XState's own answers), the counts over a real recorded log (checked by counting
 * another way), the cut, the HTTP handler, and the layered layout.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileMachine } from "../machines/compile.js";
import { readLogSync } from "../log/reader.js";
import type { LogRecord, TransitionRecord } from "../log/types.js";
import { graphOf, MACHINE_DEFINITIONS } from "../dashboard/server/machine-graph.js";
import { machinesView } from "../dashboard/server/machines-handler.js";
import { layoutGraph, routeKey, type Layout, type LayoutBox } from "../dashboard/page/graph-layout.js";
import type { MachinesView } from "../dashboard/server/machines-wire.js";
import type { ErrorBody } from "../dashboard/server/views-reply.js";
import { machineEdges } from "../verify/machine-edges.js";
import { servedLog } from "./support/served-log.js";

const LOG = "tests/fixtures/logs/old-98e2957.natlog";
const records: LogRecord[] = readLogSync(LOG).records;
const transitions = records.filter((r): r is TransitionRecord => r.kind === "transition");
const edgeName = (machine: string, e: { from: string; event: string; to: string }) => `${machine}: ${e.from} -${e.event}-> ${e.to}`;

describe("graphOf: a machine definition as a graph", () => {
  it("has every machine natsched defines: task, wtask, worker, scheduler, future", () => {
    expect(MACHINE_DEFINITIONS.map((d) => d.machine.id)).toEqual(["task", "wtask", "worker", "scheduler", "future"]);
  });

  for (const { machine } of MACHINE_DEFINITIONS) {
    it(`${machine.id}: the states and edges XState itself answers for, no more and no fewer`, () => {
      const graph = graphOf(machine);
      const table = compileMachine(machine);
      expect(graph.states.map((s) => s.id).sort()).toEqual([...table.states].sort());
      const expected: string[] = [];
      for (const from of table.states) {
        for (const event of table.events) {
          const to = table.next(from, event);
          if (to !== undefined) expected.push(edgeName(machine.id, { from, event, to }));
        }
      }
      expect(graph.edges.map((e) => edgeName(machine.id, e)).sort()).toEqual(expected.sort());
      expect(graph.states.filter((s) => s.initial).map((s) => s.id)).toEqual([table.initial]);
      expect(graph.states.filter((s) => s.final).map((s) => s.id).sort()).toEqual(table.states.filter((s) => table.isFinal(s)).sort());
    });
  }

  it("names edges as verify's coverage does, for the machines it covers", () => {
    for (const [machine, edges] of Object.entries(machineEdges())) {
      const definition = MACHINE_DEFINITIONS.find((d) => d.machine.id === machine)!.machine;
      expect(graphOf(definition).edges.map((e) => edgeName(machine, e)).sort()).toEqual([...edges].sort());
    }
  });

  it("draws the nested task states under their parent, and a parent's transition from each of them", () => {
    const task = graphOf(MACHINE_DEFINITIONS[0]!.machine);
    expect(task.states.filter((s) => s.parent === "processing").map((s) => s.id)).toEqual(["processing.assigned", "processing.stealing"]);
    expect(task.edges).toContainEqual({ from: "processing.stealing", event: "FINISH", to: "memory" });
    expect(task.edges).toContainEqual({ from: "released", event: "ASSIGN", to: "processing.assigned" });
  });
});

describe("machinesView over a real recorded log", () => {
  it("takes each edge as often as the log's transition records say", async () => {
    const view = machinesView(records);
    const counted = new Map<string, number>();
    for (const r of transitions) counted.set(edgeName(r.machine, r), (counted.get(edgeName(r.machine, r)) ?? 0) + 1);
    const shown = new Map<string, number>();
    for (const m of view.machines) for (const e of [...m.edges, ...m.offGraph]) if (e.taken > 0) shown.set(edgeName(m.id, e), e.taken);
    expect(shown).toEqual(counted);
    // This log is of the current machines: nothing off the graph.
    expect(view.machines.flatMap((m) => m.offGraph)).toEqual([]);
    expect(view.records).toBe(records.length);
    // A steal that was rejected, and a failure, are among them.
    expect(counted.get("task: processing.stealing -STEAL_REJECT-> processing.assigned")).toBeGreaterThan(0);
    expect(counted.get("wtask: executing -FAIL-> error")).toBeGreaterThan(0);
  });

  it("puts each instance in its last state: in, less out, plus the instances that began there", async () => {
    const view = machinesView(records);
    for (const m of view.machines) {
      const mine = transitions.filter((r) => r.machine === m.id);
      const firstFrom = new Map<string, string>();
      for (const r of mine) if (!firstFrom.has(`${r.actor} ${r.id}`)) firstFrom.set(`${r.actor} ${r.id}`, r.from);
      for (const state of m.states) {
        const into = mine.filter((r) => r.to === state.id).length;
        const out = mine.filter((r) => r.from === state.id).length;
        const began = [...firstFrom.values()].filter((s) => s === state.id).length;
        expect(state.count, `${m.id} ${state.id}`).toBe(into - out + began);
      }
      expect(m.instances).toBe(firstFrom.size);
      expect(m.states.reduce((n, s) => n + s.count, 0)).toBe(m.instances);
    }
    const task = view.machines.find((m) => m.id === "task")!;
    expect(task.states.find((s) => s.id === "forgotten")!.count).toBeGreaterThan(0);
  });

  it("up to a scheduler seq, counts the scheduler's transitions up to its next input after it", async () => {
    const seq = 150;
    const view = machinesView(records, { spec: { kind: "seq", value: seq } });
    const mine = records.filter((r) => r.actor === "scheduler");
    const end = mine.findIndex((r) => r.seq > seq && r.kind !== "transition");
    const expected = mine.slice(0, end).filter((r): r is TransitionRecord => r.kind === "transition" && r.machine === "task").length;
    const task = view.machines.find((m) => m.id === "task")!;
    expect(task.edges.reduce((n, e) => n + e.taken, 0)).toBe(expected);
    expect(expected).toBeLessThan(transitions.filter((r) => r.actor === "scheduler" && r.machine === "task").length);
    expect(view.cut).toBe("after scheduler #150");
  });
});

describe("machinesView at the first N records (the scrubber's cut)", () => {
  it("counts the same stepping forward, to the end and back as counting each prefix afresh", () => {
    const copy = [...records];
    for (const n of [200, 450, copy.length, 100, 0, 300]) {
      const stepped = machinesView(copy, { index: n });
      const fresh = machinesView(records.slice(0, n));
      expect(stepped.machines, `after ${n} records`).toEqual(fresh.machines);
      expect(stepped.records).toBe(n);
    }
    expect(machinesView(copy).machines).toEqual(machinesView(records.slice()).machines);
  });
});

describe("GET /api/machines", () => {
  const served = servedLog(LOG);

  it("answers the machines of the whole log, and at a time cut fewer transitions", async () => {
    const whole = (await (await fetch(`${served.base}/api/machines`)).json()) as MachinesView;
    expect(whole.machines.map((m) => m.id)).toEqual(["task", "wtask", "worker", "scheduler", "future"]);
    const taken = (view: MachinesView) => view.machines.flatMap((m) => m.edges).reduce((n, e) => n + e.taken, 0);
    expect(taken(whole)).toBe(transitions.length);
    const early = (await (await fetch(`${served.base}/api/machines?t=0.05`)).json()) as MachinesView;
    expect(early.cut).toBe("at +0.05 s");
    expect(taken(early)).toBeGreaterThan(0);
    expect(taken(early)).toBeLessThan(transitions.length);
  });

  it("at the first N records in log order (the scrubber's cut), the transitions among them", async () => {
    const index = 200;
    const view = (await (await fetch(`${served.base}/api/machines?index=${index}`)).json()) as MachinesView;
    const among = records.slice(0, index).filter((r) => r.kind === "transition").length;
    expect(view.machines.flatMap((m) => m.edges).reduce((n, e) => n + e.taken, 0)).toBe(among);
    expect(view.records).toBe(index);
  });

  it("refuses a bad cut with a 400 naming it", async () => {
    for (const query of ["seq=abc", "t=-1", "t=", "seq=1&t=2", "index=x"]) {
      const res = await fetch(`${served.base}/api/machines?${query}`);
      expect(res.status, query).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body.code).toBe("BAD_OPTION");
      expect(body.error).toMatch(/^option (seq|t|index):/);
    }
  });
});

function overlaps(a: LayoutBox, b: LayoutBox): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

function expectNoOverlap(boxes: LayoutBox[]): void {
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) expect(overlaps(boxes[i]!, boxes[j]!), `${boxes[i]!.id} and ${boxes[j]!.id}`).toBe(false);
}

/** Each edge (self-loops aside) routed from its source's side to its target's, its waypoints between the nodes, never in one. */
function expectRoutes(layout: Layout, edges: readonly { from: string; to: string }[]): void {
  const boxes = [...layout.boxes.values()];
  for (const e of edges) {
    if (e.from === e.to) continue;
    const route = layout.routes.get(routeKey(e.from, e.to))!;
    expect(route, `${e.from} -> ${e.to}`).toBeDefined();
    const [from, to] = [layout.boxes.get(e.from)!, layout.boxes.get(e.to)!];
    const onEdge = (p: { x: number; y: number }, b: LayoutBox) => p.x >= b.x && p.x <= b.x + b.width && (Math.abs(p.y - b.y) < 1e-9 || Math.abs(p.y - b.y - b.height) < 1e-9);
    expect(onEdge(route[0]!, from), `${e.from} -> ${e.to} starts on ${e.from}`).toBe(true);
    expect(onEdge(route[route.length - 1]!, to), `${e.from} -> ${e.to} ends on ${e.to}`).toBe(true);
    for (const p of route.slice(1, -1)) {
      for (const b of boxes) expect(p.x > b.x && p.x < b.x + b.width && p.y > b.y && p.y < b.y + b.height, `${e.from} -> ${e.to} passes through ${b.id}`).toBe(false);
    }
  }
}

describe("layoutGraph", () => {
  for (const { machine } of MACHINE_DEFINITIONS) {
    it(`${machine.id}: places every state, none overlapping, the initial one on top, inside the drawing`, () => {
      const graph = graphOf(machine);
      const nodes = graph.states.map((s) => ({ id: s.id, width: 40 + 7 * s.id.length, height: 38 }));
      const initial = graph.states.find((s) => s.initial)!.id;
      const layout = layoutGraph(nodes, graph.edges, { root: initial });
      const boxes = [...layout.boxes.values()];
      expect(boxes.map((b) => b.id).sort()).toEqual(nodes.map((n) => n.id).sort());
      expectNoOverlap(boxes);
      expectRoutes(layout, graph.edges);
      expect(layout.boxes.get(initial)!.layer).toBe(0);
      for (const b of boxes) {
        expect(b.x).toBeGreaterThanOrEqual(0);
        expect(b.y).toBeGreaterThanOrEqual(0);
        expect(b.x + b.width).toBeLessThanOrEqual(layout.width + 1e-9);
        expect(b.y + b.height).toBeLessThanOrEqual(layout.height + 1e-9);
      }
    });
  }

  it("puts a chain's nodes in successive layers, a back edge notwithstanding", () => {
    const nodes = ["a", "b", "c"].map((id) => ({ id, width: 30, height: 20 }));
    const layout = layoutGraph(nodes, [{ from: "a", to: "b" }, { from: "b", to: "c" }, { from: "c", to: "a" }, { from: "b", to: "b" }], { root: "a" });
    expect(["a", "b", "c"].map((id) => layout.boxes.get(id)!.layer)).toEqual([0, 1, 2]);
  });

  it("never overlaps nodes, nor routes an edge through one, on any graph, cycles and all", () => {
    const graphs = fc.integer({ min: 1, max: 14 }).chain((n) =>
      fc.record({
        sizes: fc.array(fc.record({ width: fc.integer({ min: 10, max: 160 }), height: fc.integer({ min: 10, max: 50 }) }), { minLength: n, maxLength: n }),
        edges: fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 3 * n }),
      }),
    );
    fc.assert(
      fc.property(graphs, ({ sizes, edges }) => {
        const nodes = sizes.map((s, i) => ({ id: `n${i}`, ...s }));
        const links = edges.map(([a, b]) => ({ from: `n${a}`, to: `n${b}` }));
        const layout = layoutGraph(nodes, links, { root: "n0" });
        expect(layout.boxes.size).toBe(nodes.length);
        expectNoOverlap([...layout.boxes.values()]);
        expectRoutes(layout, links);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses an edge to a node it was not given", () => {
    expect(() => layoutGraph([{ id: "a", width: 1, height: 1 }], [{ from: "a", to: "b" }])).toThrow(/names a node the graph does not have/);
  });
});
