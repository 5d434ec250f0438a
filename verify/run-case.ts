/**
 * One DST case end to end: simulate it with the checker watching every step, then check
 * the end state, that a second run gives the same log and result, and that the log
 * replays through `replay()`.
 */
import { replay } from "../replay/index.js";
import { simulate, type SimResult } from "../sim.js";
import { DstChecker, RunawayRun, type CheckStats } from "./checker.js";
import type { DstCase } from "./dst-case.js";
import type { InvariantId, Violation } from "./invariants.js";

export interface CaseReport {
  ok: boolean;
  violations: Violation[];
  /** Violations per invariant (messages are capped, counts are not). */
  counts: Partial<Record<InvariantId, number>>;
  stats: CheckStats & { tasks: number; makespan: number; logRecords: number };
  /** Transitions the cores made, as "machine: from -EVENT-> to", with how often. */
  coverage: Map<string, number>;
}

export interface RunCaseOptions {
  /** Simulate a second time and compare (default true). */
  determinism?: boolean;
  /** Replay the log with `replay()` (default true). */
  replay?: boolean;
  /** Steps before the run counts as never ending (default DEFAULT_MAX_STEPS). */
  maxSteps?: number;
}

export async function runCase(dstCase: DstCase, options: RunCaseOptions = {}): Promise<CaseReport> {
  const checker = new DstChecker(dstCase, options.maxSteps);
  let result: SimResult | null = null;
  try {
    result = simulate(structuredClone(dstCase.scenario), { observer: checker.observer });
  } catch (error) {
    if (error instanceof RunawayRun) checker.violation("termination", error.t, `${error.message}; last steps: ${lastSteps(checker)}`);
    else {
      if (process.env.DST_STACK) console.error(error);
      checker.violation("crash", -1, describe(error));
    }
  }
  if (result !== null) {
    checker.finish(result);
    if (options.determinism !== false) checkDeterminism(checker, dstCase, result);
    if (options.replay !== false) await checkReplay(checker, result);
  }
  return {
    ok: checker.ok,
    violations: checker.violations,
    counts: Object.fromEntries(checker.counts),
    stats: { ...checker.stats, tasks: dstCase.scenario.tasks.length, makespan: result?.makespan ?? 0, logRecords: result?.log.length ?? 0 },
    coverage: checker.coverage,
  };
}

function checkDeterminism(checker: DstChecker, dstCase: DstCase, first: SimResult): void {
  let again: SimResult;
  try {
    again = simulate(structuredClone(dstCase.scenario));
  } catch (error) {
    checker.violation("determinism", -1, `the second run threw: ${describe(error)}`);
    return;
  }
  const a = first.log;
  const b = again.log;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = JSON.stringify(a[i]);
    const y = JSON.stringify(b[i]);
    if (x !== y) {
      checker.violation("determinism", -1, `log record ${i} differs between two runs: ${x} vs ${y}`);
      return;
    }
  }
  const { log: _a, ...restA } = first;
  const { log: _b, ...restB } = again;
  if (JSON.stringify(restA) !== JSON.stringify(restB)) checker.violation("determinism", -1, "two runs of the case give different results");
}

async function checkReplay(checker: DstChecker, result: SimResult): Promise<void> {
  // A simulation ends with its actors running (no stop records): an open log, accepted.
  const replayed = await replay(result.log, { diffState: false, openOk: true });
  if (replayed.ok) return;
  for (const problem of replayed.problems) checker.violation("replay", -1, `log problem: ${problem.kind}: ${problem.message}`);
  for (const [actor, run] of Object.entries(replayed.actors)) {
    if (run.divergence !== undefined) checker.violation("replay", -1, `${actor}: ${run.divergence.message}`);
    if (run.halted !== undefined) checker.violation("replay", -1, `${actor}: halted at #${run.halted.seq}: ${run.halted.reason}`);
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const where = error.stack?.split("\n").find((line) => line.includes("/machines/") || line.includes("/actors/")) ?? "";
  return `${error.name}: ${error.message}${where ? ` (${where.trim()})` : ""}`;
}

/** The most frequent transitions of a run that did not end: where it loops. */
function lastSteps(checker: DstChecker): string {
  return [...checker.coverage]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([edge, n]) => `${edge} x${n}`)
    .join("; ");
}
