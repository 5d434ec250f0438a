/**
 * restart-scheduler: the simulated scheduler dies and a new one, rebuilt from its log,
 * takes over (as `natsched scheduler --log jetstream` resumes). The run goes on as if
 * nothing happened, since the rebuilt core is the same state machine fed the same inputs.
 */
import { describe, expect, it } from "vitest";
import { simulate, type Scenario, type SimTaskSpec } from "../sim.js";
import { BadOptionError } from "../machines/errors.js";
import { checkSequences } from "../log/index.js";
import { replayLog } from "./sim-helpers.js";

const tree: SimTaskSpec[] = [
  ...Array.from({ length: 12 }, (_, i) => ({ key: `load-${i}`, duration: 0.3 + (i % 3) * 0.1, nbytes: 2e6 })),
  ...Array.from({ length: 6 }, (_, i) => ({ key: `pair-${i}`, deps: [`load-${2 * i}`, `load-${2 * i + 1}`], duration: 0.2 })),
  { key: "total", deps: Array.from({ length: 6 }, (_, i) => `pair-${i}`), duration: 0.1 },
];
const scenario: Scenario = {
  workers: [{ name: "a", nthreads: 2 }, { name: "b" }, { name: "c", joinAt: 0.4 }],
  tasks: tree,
  actions: [{ at: 0.2, do: "kill-worker", worker: "b" }, { at: 0.25, do: "add-worker", worker: { name: "b" } }],
};

describe("restart-scheduler", () => {
  it("takes over mid-run from the log and the run ends exactly as without the restart", () => {
    const plain = simulate(scenario);
    let coreBefore: unknown;
    let coreAfter: unknown;
    const restarted = simulate(
      { ...scenario, actions: [...scenario.actions!, { at: 0.6, do: "restart-scheduler" }, { at: 0.9, do: "restart-scheduler" }] },
      { probes: [{ at: 0.55, probe: (v) => (coreBefore = v.scheduler) }, { at: 0.65, probe: (v) => (coreAfter = v.scheduler) }] },
    );
    expect(coreAfter).not.toBe(coreBefore); // a new core drove the rest of the run
    expect(restarted.tasks).toEqual(plain.tasks);
    expect(restarted.makespan).toBe(plain.makespan);
    expect(restarted.steals).toEqual(plain.steals);
    expect(restarted.transfers).toEqual(plain.transfers);
    expect(restarted.tasks.total!.state).toBe("memory");
    // One log, one run: gap-free and replayable as a whole.
    expect(checkSequences(restarted.log)).toEqual([]);
    expect(replayLog(restarted.log).mismatches).toEqual([]);
  });

  it("refuses a log that does not reproduce, as a resuming scheduler does", () => {
    let tampered = false;
    const run = () =>
      simulate(
        { ...scenario, actions: [...scenario.actions!, { at: 0.6, do: "restart-scheduler" }] },
        {
          observer: {
            turn: (view, log) => {
              if (tampered || view.now < 0.5) return;
              const r = log.find((x) => x.actor === "scheduler" && x.kind === "transition" && x.machine === "task");
              if (r !== undefined && r.kind === "transition") (r as { to: string }).to = "erred";
              tampered = true;
            },
          },
        },
      );
    expect(run).toThrow(/log is not reproduced at transition #\d+/);
  });

  it("needs the log in memory", () => {
    expect(() => simulate({ ...scenario, actions: [{ at: 0.5, do: "restart-scheduler" }] }, { log: false })).toThrow(BadOptionError);
  });

  it("is a scenario action like the others: validated, and listed in its errors", () => {
    expect(() => simulate({ ...scenario, actions: [{ at: -1, do: "restart-scheduler" }] })).toThrow(/actions\[0\]\.at/);
    expect(() => simulate({ ...scenario, actions: [{ at: 1, do: "restart-scheduler", worker: "a" } as never] })).toThrow(/worker/);
  });
});
