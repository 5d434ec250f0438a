/**
 * Model-based checking of every machine definition with `xstate/graph` (verify/model.ts):
 * generated paths (shortest, simple, and one per edge) reach every state and take every
 * transition the definition has, each step is played on the compiled table the cores run
 * and must agree with XState, and the machine's invariants hold on every edge and in every
 * state reached.
 */
import { describe, expect, it } from "vitest";
import { setup } from "xstate";
import { compileMachine } from "../machines/compile.js";
import { taskMachine } from "../machines/tables.js";
import { machineEdges } from "../verify/machine-edges.js";
import { MODELS, checkModel, type MachineModel } from "../verify/model.js";

describe.each(MODELS)("$name machine", (model) => {
  it("generated paths reach every state and take every transition; the table agrees at every step; every invariant holds", async () => {
    const report = await checkModel(model);
    expect(report.violations).toEqual([]);
    expect(report.reached).toEqual(report.states);
    expect(report.covered).toEqual(report.edges);
    expect(report.definitionCovered).toEqual(report.definition);
    expect(report.tableOnly).toEqual([]);
    expect(report.modelOnly).toEqual([]);
    expect(report.paths.shortest).toBe(report.states.length);
    expect(report.paths.perEdge).toBe(report.edges.length);
    // The edges DST counts the cores' coverage against are exactly these.
    expect(machineEdges()[model.name]!.map((e) => e.slice(e.indexOf(": ") + 2)).sort()).toEqual(report.edges);
  });
});

const TASK_MODEL = MODELS.find((m) => m.name === "task")!;

/** The task machine with one more transition: queued may go straight to processing.stealing. */
const brokenTaskMachine = setup({ types: { events: {} as { type: (typeof taskMachine.events)[number] } } }).createMachine({
  id: "task",
  initial: "released",
  states: {
    released: { on: { WAIT: "waiting", QUEUE: "queued", NO_WORKER: "no-worker", ASSIGN: "processing", DATA: "memory", ERR: "erred", FORGET: "forgotten" } },
    waiting: { on: { QUEUE: "queued", NO_WORKER: "no-worker", ASSIGN: "processing", DATA: "memory", ERR: "erred", RELEASE: "released" } },
    queued: { on: { ASSIGN: "processing", STEAL: "processing.stealing", DATA: "memory", RELEASE: "released" } },
    "no-worker": { on: { ASSIGN: "processing", QUEUE: "queued", DATA: "memory", ERR: "erred", RELEASE: "released" } },
    processing: {
      initial: "assigned",
      on: { FINISH: "memory", DATA: "memory", ERR: "erred", RELEASE: "released" },
      states: { assigned: { on: { STEAL: "stealing" } }, stealing: { on: { STEAL_CONFIRM: "assigned", STEAL_REJECT: "assigned" } } },
    },
    memory: { on: { RELEASE: "released", DATA: "memory" } },
    erred: { on: { RELEASE: "released" } },
    forgotten: { type: "final" },
  },
});

describe("the model check catches a broken definition", () => {
  it("a transition that breaks an invariant is reported with the rule it breaks", async () => {
    const broken: MachineModel = { ...TASK_MODEL, machine: brokenTaskMachine, table: compileMachine(brokenTaskMachine) };
    const report = await checkModel(broken);
    expect(report.violations).toContain('task: queued -STEAL-> processing.stealing breaks "stealing is entered only by STEAL from processing.assigned"');
    expect(report.violations).toContain('task: queued -STEAL-> processing.stealing breaks "STEAL is accepted only in processing.assigned"');
  });

  it("a table that does not match its machine is caught on the step where they part", async () => {
    const stale: MachineModel = { ...TASK_MODEL, machine: brokenTaskMachine, table: TASK_MODEL.table };
    const report = await checkModel(stale);
    expect(report.violations).toContain("task: the table takes queued -STEAL-> (refused), XState goes to processing.stealing");
    expect(report.modelOnly).toEqual(["queued -STEAL-> processing.stealing"]);
  });
});
