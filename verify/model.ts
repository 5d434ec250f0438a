/**
 * Model-based checking of the machine definitions with `xstate/graph`: the XState machine
 * is the model, the compiled table the cores run (machines/tables.ts) is the system under
 * test. Paths are generated with explicit event payloads and a bounded state serialization
 * (the state value: the machines have no context), every step is played on the table, and
 * the machine's invariants are checked on every edge taken and in every state reached.
 */
import type { AnyMachineSnapshot, AnyStateMachine } from "xstate";
import { createTestModel, type StatePath, type TestModel } from "xstate/graph";
import { stateKey, type CompiledMachine } from "../machines/compile.js";
import { SCHEDULER, TASK, WORKER, WORKER_TASK, schedulerMachine, taskMachine, workerMachine, workerTaskMachine } from "../machines/tables.js";

export interface EdgeRule {
  name: string;
  holds(from: string, event: string, to: string): boolean;
}

export interface StateRule {
  name: string;
  /** `next(event)` is the table's answer in this state. */
  holds(state: string, next: (event: string) => string | undefined, final: boolean): boolean;
}

export interface MachineModel {
  name: string;
  machine: AnyStateMachine;
  table: CompiledMachine;
  edgeRules: EdgeRule[];
  stateRules: StateRule[];
}

const among = (value: string, ...allowed: string[]): boolean => allowed.includes(value);
/** `premise` implies `conclusion`. */
const implies = (premise: boolean, conclusion: boolean): boolean => !premise || conclusion;

export const MODELS: MachineModel[] = [
  {
    name: "task",
    machine: taskMachine,
    table: TASK,
    edgeRules: [
      { name: "stealing is entered only by STEAL from processing.assigned", holds: (f, e, t) => implies(t === "processing.stealing" && f !== t, f === "processing.assigned" && e === "STEAL") },
      { name: "STEAL is accepted only in processing.assigned", holds: (f, e) => implies(e === "STEAL", f === "processing.assigned") },
      {
        name: "stealing is left only by the steal's answer, the result, a failure or a release",
        holds: (f, e) => implies(f === "processing.stealing", among(e, "STEAL_CONFIRM", "STEAL_REJECT", "FINISH", "DATA", "ERR", "RELEASE")),
      },
      { name: "a steal's answer goes back to processing.assigned", holds: (f, e, t) => implies(among(e, "STEAL_CONFIRM", "STEAL_REJECT"), f === "processing.stealing" && t === "processing.assigned") },
      { name: "an assignment starts in processing.assigned", holds: (_f, e, t) => implies(e === "ASSIGN", t === "processing.assigned") },
      { name: "memory is entered only with a result or data", holds: (_f, e, t) => implies(t === "memory", among(e, "FINISH", "DATA")) },
      { name: "memory is left only by RELEASE, to released", holds: (f, e, t) => implies(f === "memory" && t !== "memory", e === "RELEASE" && t === "released") },
      { name: "erred is entered only by ERR", holds: (f, e, t) => implies(t === "erred" && f !== "erred", e === "ERR") },
      { name: "erred is left only by RELEASE", holds: (f, e) => implies(f === "erred", e === "RELEASE") },
      { name: "forgotten is entered only by FORGET, from released", holds: (f, e, t) => implies(t === "forgotten", e === "FORGET" && f === "released") },
      { name: "FINISH always ends in memory", holds: (_f, e, t) => implies(e === "FINISH", t === "memory") },
    ],
    stateRules: [
      { name: "forgotten is final and accepts nothing", holds: (s, next, final) => implies(s === "forgotten", final && TASK.events.every((e) => next(e) === undefined)) },
      { name: "only forgotten is final", holds: (s, _next, final) => final === (s === "forgotten") },
      { name: "a live task can always be let go (RELEASE, or FORGET when released)", holds: (s, next) => implies(s !== "forgotten", next(s === "released" ? "FORGET" : "RELEASE") !== undefined) },
      {
        name: "a task waiting for inputs or a worker, or running, can always fail (a queued one has its inputs and runs nowhere)",
        holds: (s, next) => (next("ERR") === "erred") === among(s, "released", "waiting", "no-worker", "processing.assigned", "processing.stealing"),
      },
      { name: "memory takes the same data scattered again, and no second result", holds: (s, next) => implies(s === "memory", next("DATA") === "memory" && next("FINISH") === undefined) },
    ],
  },
  {
    name: "wtask",
    machine: workerTaskMachine,
    table: WORKER_TASK,
    edgeRules: [
      { name: "executing is entered only by EXECUTE from ready", holds: (f, e, t) => implies(t === "executing" && f !== t, f === "ready" && e === "EXECUTE") },
      { name: "a steal is confirmed only before the task starts (waiting, ready), back to released", holds: (f, e, t) => implies(e === "STEAL", among(f, "waiting", "ready") && t === "released") },
      { name: "cancelled is entered only by FREE while work is under way", holds: (f, e, t) => implies(t === "cancelled" && f !== t, e === "FREE" && among(f, "executing", "flight", "resumed")) },
      { name: "resumed is entered only by COMPUTE_AGAIN from cancelled", holds: (f, e, t) => implies(t === "resumed" && f !== t, f === "cancelled" && e === "COMPUTE_AGAIN") },
      { name: "memory is entered only by a result, a transfer or data", holds: (f, e, t) => implies(t === "memory" && f !== t, among(e, "DONE", "RECEIVED", "DATA")) },
      { name: "a cancelled task's outcome is discarded", holds: (f, _e, t) => implies(f === "cancelled" && t !== f, among(t, "released", "resumed")) },
      { name: "STALE changes nothing", holds: (f, e, t) => implies(e === "STALE", f === t) },
      { name: "CONFIRM only vouches for data already in memory", holds: (f, e, t) => implies(e === "CONFIRM", f === "memory" && t === "memory") },
      { name: "data is handed over only to a task the worker does not have (scatter never overwrites)", holds: (f, e) => implies(e === "DATA", f === "released") },
      { name: "flight is entered only by GATHER from fetch", holds: (f, e, t) => implies(t === "flight" && f !== t, f === "fetch" && e === "GATHER") },
    ],
    stateRules: [
      { name: "no worker-side state is final", holds: (_s, _next, final) => !final },
      { name: "every state but released and cancelled accepts FREE", holds: (s, next) => (next("FREE") !== undefined) === !among(s, "released", "cancelled") },
      { name: "released takes no outcome", holds: (s, next) => implies(s === "released", ["DONE", "FAIL", "RECEIVED", "FETCH_FAILED"].every((e) => next(e) === undefined)) },
      { name: "every state can drop a superseded instruction (STALE, staying put)", holds: (s, next) => next("STALE") === s },
    ],
  },
  {
    name: "worker",
    machine: workerMachine,
    table: WORKER,
    edgeRules: [
      { name: "START only from starting", holds: (f, e) => implies(e === "START", f === "starting") },
      { name: "running is entered only by START", holds: (f, e, t) => implies(t === "running" && f !== t, e === "START") },
      { name: "a worker still starting is started or closed by its host, never declared gone", holds: (f, e) => implies(f === "starting", among(e, "START", "CLOSE")) },
      { name: "closing only leads to closed", holds: (f, _e, t) => implies(f === "closing", t === "closed") },
    ],
    stateRules: [
      { name: "closed is final and accepts nothing", holds: (s, next, final) => implies(s === "closed", final && WORKER.events.every((e) => next(e) === undefined)) },
      { name: "a started worker can always be declared gone", holds: (s, next) => implies(among(s, "running", "closing"), next("CLOSED") === "closed") },
    ],
  },
  {
    name: "scheduler",
    machine: schedulerMachine,
    table: SCHEDULER,
    edgeRules: [
      { name: "START only from starting", holds: (f, e) => implies(e === "START", f === "starting") },
      { name: "closing only leads to closed", holds: (f, _e, t) => implies(f === "closing", t === "closed") },
      { name: "only a started scheduler is closed", holds: (f, e) => implies(e === "CLOSE", f === "running") },
    ],
    stateRules: [{ name: "closed is final and accepts nothing", holds: (s, next, final) => implies(s === "closed", final && SCHEDULER.events.every((e) => next(e) === undefined)) }],
  },
];

export interface ModelReport {
  machine: string;
  /** Leaf states of the definition, and those the generated paths reached. */
  states: string[];
  reached: string[];
  /** Leaf-level edges ("from -EVENT-> to") of XState's adjacency map, and those played on the table. */
  edges: string[];
  covered: string[];
  /** Transitions as the definition writes them ("node on EVENT"), and those some path took. */
  definition: string[];
  definitionCovered: string[];
  paths: { shortest: number; simple: number; perEdge: number; steps: number };
  /** Edges of the compiled table that XState does not have, and the reverse. */
  tableOnly: string[];
  modelOnly: string[];
  violations: string[];
}

type Snapshot = AnyMachineSnapshot;

export async function checkModel(model: MachineModel): Promise<ModelReport> {
  const { machine, table } = model;
  const testModel = createTestModel(machine, {
    events: table.events.map((type) => ({ type })),
    // Bounded: a state is its value (the machines carry no context).
    serializeState: (snapshot) => stateKey((snapshot as Snapshot).value),
  }) as unknown as TestModel<Snapshot, { type: string }, unknown>;

  const violations = new Set<string>();
  const reached = new Set<string>();
  const covered = new Set<string>();
  let steps = 0;

  const play = async (path: StatePath<Snapshot, { type: string }>): Promise<void> => {
    let current = table.initial as string;
    const events: Record<string, (step: { event: { type: string }; state: Snapshot }) => void> = {};
    for (const type of table.events) {
      events[type] = (step) => {
        steps += 1;
        const to = table.next(current, type);
        const expected = stateKey(step.state.value);
        if (to !== expected) violations.add(`${model.name}: the table takes ${current} -${type}-> ${to ?? "(refused)"}, XState goes to ${expected}`);
        for (const rule of model.edgeRules) {
          if (!rule.holds(current, type, expected)) violations.add(`${model.name}: ${current} -${type}-> ${expected} breaks "${rule.name}"`);
        }
        covered.add(`${current} -${type}-> ${expected}`);
        current = expected;
      };
    }
    const check = (snapshot: Snapshot): void => {
      const state = stateKey(snapshot.value);
      reached.add(state);
      if (state !== current) violations.add(`${model.name}: the table is in ${current}, XState in ${state}`);
      const next = (event: string): string | undefined => table.next(state, event);
      for (const rule of model.stateRules) {
        if (!rule.holds(state, next, snapshot.status === "done")) violations.add(`${model.name}: state ${state} breaks "${rule.name}"`);
      }
    };
    await testModel.testPath(path, { events, states: { "*": check } } as never);
  };

  // Every state's own shortest path (not only those no longer path contains), to extend by each edge.
  const shortest = testModel.getShortestPaths({ allowDuplicatePaths: true });
  const simple = testModel.getSimplePaths({ allowDuplicatePaths: true });
  const adjacency = testModel.getAdjacencyMap();
  const edges: string[] = [];
  const perEdge: StatePath<Snapshot, { type: string }>[] = [];
  for (const vertex of Object.values(adjacency)) {
    const from = stateKey(vertex.state.value);
    const to = shortest.find((p) => stateKey(p.state.value) === from);
    for (const { event, state } of Object.values(vertex.transitions) as { event: { type: string }; state: Snapshot }[]) {
      edges.push(`${from} -${event.type}-> ${stateKey(state.value)}`);
      if (to !== undefined) perEdge.push({ state, steps: [...to.steps, { event, state }], weight: to.weight + 1 });
    }
  }
  for (const path of [...shortest, ...simple, ...perEdge]) await play(path);

  const tableEdges = table.states.flatMap((from) => table.events.flatMap((e) => (table.next(from, e) === undefined ? [] : [`${from} -${e}-> ${table.next(from, e)}`])));
  const definition = definitionTransitions(machine);
  const definitionCovered = definition.filter(({ node, event }) => [...covered].some((edge) => {
    const [from, rest] = edge.split(" -");
    return rest!.startsWith(`${event}->`) && (node === "" || from === node || from!.startsWith(`${node}.`));
  }));
  return {
    machine: model.name,
    states: leafStates(machine),
    reached: [...reached].sort(),
    edges: edges.sort(),
    covered: [...covered].sort(),
    definition: definition.map(label),
    definitionCovered: definitionCovered.map(label),
    paths: { shortest: shortest.length, simple: simple.length, perEdge: perEdge.length, steps },
    tableOnly: tableEdges.filter((e) => !edges.includes(e)).sort(),
    modelOnly: edges.filter((e) => !tableEdges.includes(e)).sort(),
    violations: [...violations].sort(),
  };
}

export async function checkModels(): Promise<ModelReport[]> {
  const reports: ModelReport[] = [];
  for (const model of MODELS) reports.push(await checkModel(model));
  return reports;
}

interface NodeLike {
  path: string[];
  states: Record<string, NodeLike>;
  transitions: Map<string, unknown[]>;
}

/** Every (state node, event) the definition gives a transition for; the node as a dot path ("" for the root). */
function definitionTransitions(machine: AnyStateMachine): { node: string; event: string }[] {
  const out: { node: string; event: string }[] = [];
  const visit = (node: NodeLike): void => {
    for (const event of node.transitions.keys()) out.push({ node: node.path.join("."), event });
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root as unknown as NodeLike);
  return out;
}

function label({ node, event }: { node: string; event: string }): string {
  return `${node || "(root)"} on ${event}`;
}

function leafStates(machine: AnyStateMachine): string[] {
  const out: string[] = [];
  const visit = (node: NodeLike): void => {
    const children = Object.values(node.states);
    if (children.length === 0) out.push(node.path.join("."));
    for (const child of children) visit(child);
  };
  visit(machine.root as unknown as NodeLike);
  return out.sort();
}
