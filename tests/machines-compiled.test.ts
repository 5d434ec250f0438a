/**
 * The compiled transition tables (machines/tables.ts) must be the XState machines, only
 * faster: same states, same events, same answer for every (state, event), and the
 * structural promises the scheduler and worker cores rely on.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { getInitialSnapshot, getNextSnapshot, type AnyMachineSnapshot, type AnyStateMachine, type StateValue } from "xstate";
import { stateKey, type CompiledMachine } from "../machines/compile.js";
import {
  SCHEDULER,
  TASK,
  WORKER,
  WORKER_TASK,
  schedulerMachine,
  taskMachine,
  workerMachine,
  workerTaskMachine,
} from "../machines/tables.js";
import { FUTURE, futureMachine } from "../machines/client/future-table.js";

interface Case {
  name: string;
  table: CompiledMachine;
  machine: AnyStateMachine;
  /** Every leaf state, as the state-name types in machines/tables.ts list them. */
  states: string[];
  /** Every event of the machine's event type. */
  events: string[];
  initial: string;
  finals: string[];
}

const CASES: Case[] = [
  {
    name: "TASK",
    table: TASK,
    machine: taskMachine,
    states: ["released", "waiting", "queued", "no-worker", "processing.assigned", "processing.stealing", "memory", "erred", "forgotten"],
    events: ["WAIT", "QUEUE", "NO_WORKER", "ASSIGN", "FINISH", "DATA", "ERR", "RELEASE", "FORGET", "STEAL", "STEAL_CONFIRM", "STEAL_REJECT"],
    initial: "released",
    finals: ["forgotten"],
  },
  {
    name: "WORKER_TASK",
    table: WORKER_TASK,
    machine: workerTaskMachine,
    states: ["released", "waiting", "fetch", "flight", "ready", "executing", "cancelled", "resumed", "memory", "error"],
    events: ["WAIT_DEPS", "READY", "FETCH", "GATHER", "RECEIVED", "FETCH_FAILED", "EXECUTE", "DONE", "FAIL", "STEAL", "FREE", "COMPUTE_AGAIN", "DATA", "CONFIRM", "STALE"],
    initial: "released",
    finals: [],
  },
  {
    name: "WORKER",
    table: WORKER,
    machine: workerMachine,
    states: ["starting", "running", "closing", "closed"],
    events: ["START", "CLOSE", "CLOSED"],
    initial: "starting",
    finals: ["closed"],
  },
  {
    name: "SCHEDULER",
    table: SCHEDULER,
    machine: schedulerMachine,
    states: ["starting", "running", "closing", "closed"],
    events: ["START", "CLOSE", "CLOSED"],
    initial: "starting",
    finals: ["closed"],
  },
  {
    name: "FUTURE",
    table: FUTURE,
    machine: futureMachine,
    states: ["pending", "finished", "error", "cancelled"],
    events: ["IN_MEMORY", "ERRED", "CANCELLED", "CANCEL", "FAILED", "SUBMIT", "LOST", "RESUBMIT", "UNRECOVERABLE"],
    initial: "pending",
    finals: [],
  },
];

function valueOf(key: string): StateValue {
  const parts = key.split(".");
  let value: StateValue = parts[parts.length - 1]!;
  for (let i = parts.length - 2; i >= 0; i--) value = { [parts[i]!]: value };
  return value;
}

function snapshotAt(machine: AnyStateMachine, key: string): AnyMachineSnapshot {
  return machine.resolveState({ value: valueOf(key), context: undefined }) as AnyMachineSnapshot;
}

/** What XState itself says: the next state's key, or undefined when the event is not accepted. */
function xstateNext(machine: AnyStateMachine, snapshot: AnyMachineSnapshot, event: string): string | undefined {
  if (!snapshot.can({ type: event })) {
    // Not accepted: XState must leave the state as it is.
    const same = getNextSnapshot(machine, snapshot, { type: event });
    expect(stateKey(same.value)).toBe(stateKey(snapshot.value));
    return undefined;
  }
  return stateKey(getNextSnapshot(machine, snapshot, { type: event }).value);
}

/** Leaf state nodes of the definition (atomic and final), as dot paths. */
function leafStates(machine: AnyStateMachine): string[] {
  const out: string[] = [];
  const visit = (node: { path: string[]; states: Record<string, unknown>; type: string }): void => {
    const children = Object.values(node.states) as (typeof node)[];
    if (children.length === 0) out.push(node.path.join("."));
    else for (const child of children) visit(child);
  };
  visit(machine.root as unknown as { path: string[]; states: Record<string, unknown>; type: string });
  return out.sort();
}

/** States reachable from the initial state, walking XState snapshots (not the table). */
function reachableByXState(machine: AnyStateMachine, events: string[]): string[] {
  const seen = new Set<string>();
  const pending: AnyMachineSnapshot[] = [getInitialSnapshot(machine) as AnyMachineSnapshot];
  while (pending.length > 0) {
    const snapshot = pending.pop()!;
    const key = stateKey(snapshot.value);
    if (seen.has(key)) continue;
    seen.add(key);
    for (const event of events) {
      if (!snapshot.can({ type: event })) continue;
      pending.push(getNextSnapshot(machine, snapshot, { type: event }) as AnyMachineSnapshot);
    }
  }
  return [...seen].sort();
}

describe.each(CASES)("$name: compiled table vs XState", (c) => {
  it("lists exactly the machine's states and events, with the right initial state", () => {
    expect([...c.table.states].sort()).toEqual([...c.states].sort());
    expect([...c.table.events].sort()).toEqual([...c.events].sort());
    expect(c.table.initial).toBe(c.initial);
    expect(stateKey(getInitialSnapshot(c.machine).value)).toBe(c.initial);
    expect(c.table.id).toBe(c.machine.id);
  });

  it("every state of the definition is reachable from the initial state", () => {
    const leaves = leafStates(c.machine);
    expect(leaves).toEqual([...c.states].sort());
    expect(reachableByXState(c.machine, c.events)).toEqual(leaves);
  });

  it("agrees with XState on every state x event", () => {
    let compared = 0;
    for (const state of c.states) {
      const snapshot = snapshotAt(c.machine, state);
      expect(stateKey(snapshot.value)).toBe(state);
      for (const event of c.events) {
        const expected = snapshot.status === "done" ? undefined : xstateNext(c.machine, snapshot, event);
        expect({ state, event, next: c.table.next(state, event) }).toEqual({ state, event, next: expected });
        compared++;
      }
      expect(c.table.isFinal(state)).toBe(snapshot.status === "done");
      expect(c.table.top(state)).toBe(state.split(".")[0]);
    }
    expect(compared).toBe(c.states.length * c.events.length);
  });

  it("rejects events and states it does not know", () => {
    for (const state of c.states) expect(c.table.next(state, "NOT_AN_EVENT")).toBeUndefined();
    for (const event of c.events) expect(c.table.next("not-a-state", event)).toBeUndefined();
  });

  it("final states are exactly the expected ones and accept nothing", () => {
    expect(c.states.filter((s) => c.table.isFinal(s)).sort()).toEqual([...c.finals].sort());
    for (const final of c.finals) {
      for (const event of c.events) expect(c.table.next(final, event)).toBeUndefined();
    }
  });

  it("random walks from the initial state: the table and XState step together", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...c.events), { maxLength: 60 }), (walk) => {
        let snapshot = getInitialSnapshot(c.machine) as AnyMachineSnapshot;
        let state = c.table.initial;
        for (const event of walk) {
          const accepted = snapshot.status !== "done" && snapshot.can({ type: event });
          const next = c.table.next(state, event);
          expect(next !== undefined).toBe(accepted);
          if (next !== undefined) {
            snapshot = getNextSnapshot(c.machine, snapshot, { type: event }) as AnyMachineSnapshot;
            state = next;
          }
          expect(state).toBe(stateKey(snapshot.value));
          expect(c.table.isFinal(state)).toBe(snapshot.status === "done");
        }
      }),
      { numRuns: 300 },
    );
  });

  it("random walks over accepted events only reach every state", () => {
    const visited = new Set<string>([c.table.initial]);
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 40 }), (choices) => {
        let snapshot = getInitialSnapshot(c.machine) as AnyMachineSnapshot;
        let state = c.table.initial;
        for (const choice of choices) {
          const options = c.events.filter((e) => c.table.next(state, e) !== undefined);
          if (options.length === 0) {
            expect(snapshot.status).toBe("done");
            break;
          }
          const event = options[choice % options.length]!;
          expect(snapshot.can({ type: event })).toBe(true);
          snapshot = getNextSnapshot(c.machine, snapshot, { type: event }) as AnyMachineSnapshot;
          state = c.table.next(state, event)!;
          expect(state).toBe(stateKey(snapshot.value));
          visited.add(state);
        }
      }),
      { numRuns: 400, seed: 42 },
    );
    expect([...visited].sort()).toEqual([...c.states].sort());
  });
});

describe("structural promises", () => {
  const LEAVE_STEALING = ["STEAL_CONFIRM", "STEAL_REJECT", "FINISH", "DATA", "ERR", "RELEASE"];

  it("processing.stealing is entered only by STEAL from processing.assigned", () => {
    for (const state of TASK.states) {
      for (const event of TASK.events) {
        if (TASK.next(state, event) !== "processing.stealing") continue;
        expect({ state, event }).toEqual({ state: "processing.assigned", event: "STEAL" });
      }
    }
    expect(TASK.next("processing.assigned", "STEAL")).toBe("processing.stealing");
  });

  it("processing.stealing is left only by STEAL_CONFIRM/STEAL_REJECT/FINISH/DATA/ERR/RELEASE", () => {
    const leaving = TASK.events.filter((e) => {
      const next = TASK.next("processing.stealing", e);
      return next !== undefined && next !== "processing.stealing";
    });
    expect([...leaving].sort()).toEqual([...LEAVE_STEALING].sort());
    // Nothing else is even accepted there (no self-loops hiding other events).
    const accepted = TASK.events.filter((e) => TASK.next("processing.stealing", e) !== undefined);
    expect([...accepted].sort()).toEqual([...LEAVE_STEALING].sort());
    expect(TASK.next("processing.stealing", "STEAL_CONFIRM")).toBe("processing.assigned");
    expect(TASK.next("processing.stealing", "STEAL_REJECT")).toBe("processing.assigned");
    expect(TASK.next("processing.stealing", "FINISH")).toBe("memory");
    expect(TASK.next("processing.stealing", "ERR")).toBe("erred");
    expect(TASK.next("processing.stealing", "RELEASE")).toBe("released");
    expect(TASK.next("processing.stealing", "STEAL")).toBeUndefined();
  });

  it("steal answers are only accepted while a steal is in flight", () => {
    for (const state of TASK.states) {
      if (state === "processing.stealing") continue;
      expect(TASK.next(state, "STEAL_CONFIRM")).toBeUndefined();
      expect(TASK.next(state, "STEAL_REJECT")).toBeUndefined();
    }
  });

  it("the worker-side STEAL is accepted only in waiting and ready (the confirm states), back to released", () => {
    const confirm = WORKER_TASK.states.filter((s) => WORKER_TASK.next(s, "STEAL") !== undefined);
    expect([...confirm].sort()).toEqual(["ready", "waiting"]);
    expect(WORKER_TASK.next("waiting", "STEAL")).toBe("released");
    expect(WORKER_TASK.next("ready", "STEAL")).toBe("released");
  });

  it("forgotten and closed are final; no other state of TASK, WORKER or SCHEDULER is", () => {
    expect(TASK.isFinal("forgotten")).toBe(true);
    expect(WORKER.isFinal("closed")).toBe(true);
    expect(SCHEDULER.isFinal("closed")).toBe(true);
    expect(TASK.states.filter((s) => TASK.isFinal(s))).toEqual(["forgotten"]);
    expect(WORKER.states.filter((s) => WORKER.isFinal(s))).toEqual(["closed"]);
    expect(SCHEDULER.states.filter((s) => SCHEDULER.isFinal(s))).toEqual(["closed"]);
    expect(WORKER_TASK.states.filter((s) => WORKER_TASK.isFinal(s))).toEqual([]);
  });

  it("a task is forgotten only once released (an erred one is released first, freeing its failure)", () => {
    const from = TASK.states.filter((s) => TASK.next(s, "FORGET") === "forgotten");
    expect([...from].sort()).toEqual(["released"]);
  });

  it("every non-final state can still reach a final state (TASK, WORKER, SCHEDULER)", () => {
    for (const table of [TASK, WORKER, SCHEDULER] as CompiledMachine[]) {
      for (const start of table.states) {
        const seen = new Set<string>([start]);
        const stack = [start];
        let final = false;
        while (stack.length > 0 && !final) {
          const s = stack.pop()!;
          if (table.isFinal(s)) final = true;
          for (const e of table.events) {
            const n = table.next(s, e);
            if (n !== undefined && !seen.has(n)) {
              seen.add(n);
              stack.push(n);
            }
          }
        }
        expect({ machine: table.id, start, final }).toEqual({ machine: table.id, start, final: true });
      }
    }
  });

  it("every worker-side task state can get back to released (the worker can always drop it)", () => {
    for (const start of WORKER_TASK.states) {
      const seen = new Set<string>([start]);
      const stack = [start];
      while (stack.length > 0) {
        const s = stack.pop()!;
        for (const e of WORKER_TASK.events) {
          const n = WORKER_TASK.next(s, e);
          if (n !== undefined && !seen.has(n)) {
            seen.add(n);
            stack.push(n);
          }
        }
      }
      expect(seen.has("released")).toBe(true);
    }
  });
});
