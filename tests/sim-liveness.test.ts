/**
 * The simulator finds a killed worker lost as the live scheduler host does: with the host
 * kit's liveness check on virtual time (silent past workerTtl, or silent and nobody serving
 * its subject), not at once. So a what-if of a run where a worker died sees the same delay.
 */
import { describe, expect, it } from "vitest";
import { silenceBeforeLoss } from "../actors/host/liveness.js";
import type { InputRecord, LogRecord } from "../log/types.js";
import { extractWorkload } from "../tools/workload-extract.js";
import { simulate, type Scenario } from "../sim.js";
import { independentTasks, replayLog } from "./sim-helpers.js";

function losses(log: LogRecord[]): { t: number; name: string; reason: string }[] {
  return log.flatMap((r) =>
    r.actor === "scheduler" && r.kind === "input" && r.event.op === "worker-lost" ? [{ t: r.t, name: String(r.event.name), reason: String((r as InputRecord).event.reason) }] : [],
  );
}

/** a and b, one thread each, ten one-second tasks; a dies at 2.2, while it runs its third. */
function killedAt(config: Scenario["config"] = {}): Scenario {
  return {
    config,
    workers: [{ name: "a" }, { name: "b" }],
    tasks: independentTasks("slowinc", 10, { duration: 1 }),
    actions: [{ at: 2.2, do: "kill-worker", worker: "a" }],
  };
}

describe("a killed worker, found by the liveness check", () => {
  it("is lost once nobody has served its subject for the unreachable window, as on NATS", () => {
    const result = simulate(killedAt());
    // a was last heard at 2.001 (its report of the task it finished at 2). Checks run every
    // heartbeat (0.5 s): the one at 4 finds it silent for three heartbeats and probes it;
    // nobody answers (its mailbox closed with it), and 2 s later, at the 6.5 check, it is lost.
    expect(losses(result.log)).toEqual([{ t: 6.5, name: "a", reason: "connection gone: no message for 4.5s and nobody serving its subject for 2.5s" }]);
    // Its task stayed processing there until then, and ran again on b after.
    const stuck = Object.entries(result.tasks).filter(([, t]) => t.executions === 2);
    expect(stuck.length).toBeGreaterThan(0);
    expect(Object.values(result.tasks).every((t) => t.state === "memory" && t.worker === "b")).toBe(true);
    const reruns = result.log.filter((r) => r.actor === "worker.b" && r.kind === "transition" && r.event === "EXECUTE" && stuck.some(([key]) => key === r.id));
    expect(reruns.every((r) => r.t >= 6.5)).toBe(true);
  });

  it("is lost after workerTtl when that comes first", () => {
    const result = simulate(killedAt({ workerTtl: 1 }));
    // Silent for more than 1 s at the 3.5 check (since 2.001): lost there, before any probe.
    expect(losses(result.log)).toEqual([{ t: 3.5, name: "a", reason: "no message for 1.5s (workerTtl 1s)" }]);
  });

  it("leaves a run that is deterministic and replays", () => {
    const one = simulate({ ...killedAt(), seed: 7 });
    const two = simulate({ ...killedAt(), seed: 7 });
    expect(JSON.stringify(two.log)).toBe(JSON.stringify(one.log));
    expect(replayLog(one.log).mismatches).toEqual([]);
  });

  it("a registration delivered after its worker died is watched, and lost as silent", () => {
    // The scheduler loses a at 1 (lose-worker) and a registers again at 1.5; the registration
    // is on its way (50 ms) when a dies at 1.52. The scheduler takes it at 1.55, and never
    // hears from a again.
    const result = simulate({
      network: { latency: 0.05 },
      workers: [{ name: "a" }, { name: "b" }],
      tasks: independentTasks("slowinc", 4, { duration: 3 }),
      actions: [
        { at: 1, do: "lose-worker", worker: "a", back: 0.5 },
        { at: 1.52, do: "kill-worker", worker: "a" },
      ],
    });
    const registered = result.log.filter((r) => r.actor === "scheduler" && r.kind === "input" && r.event.op === "register-worker" && r.event.name === "a");
    expect(registered.map((r) => r.t)).toEqual([0, 1.55]);
    const [lose, found] = losses(result.log);
    expect(lose).toEqual({ t: 1, name: "a", reason: "no heartbeat (lost)" });
    // Probed at the 3.5 check (silent for 1.95 s), unanswered from 3.6, lost at the 6.0 check.
    expect(found).toEqual({ t: 6, name: "a", reason: "connection gone: no message for 4.5s and nobody serving its subject for 2.4s" });
  });

  it("a what-if of the run finds it lost when the recorded run did, give or take a check", () => {
    const recorded = simulate(killedAt());
    const [lost] = losses(recorded.log);
    const { scenario, origin } = extractWorkload(recorded.log);
    // The death is placed where the worker was last heard: the loss minus the silence it reports.
    const kill = scenario.actions?.find((a) => a.do === "kill-worker");
    expect(kill).toMatchObject({ worker: "a", at: expect.closeTo(lost!.t - silenceBeforeLoss(lost!.reason)! - origin, 3) });
    const [again] = losses(simulate(scenario).log);
    expect(again).toMatchObject({ name: "a", reason: expect.stringMatching(/^connection gone: /) });
    expect(Math.abs(again!.t + origin - lost!.t)).toBeLessThanOrEqual(0.5);
  });
});
