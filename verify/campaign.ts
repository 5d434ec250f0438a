/**
 * A DST campaign: `runs` random cases from one seed, every invariant checked on each. A
 * failing case is shrunk by fast-check to a minimal one, saved as a fixture, and the
 * campaign goes on from the next seed with the runs it has left.
 */
import fc from "fast-check";
import { DEFAULT_CASE_OPTIONS, dstCaseArb, type CaseOptions, type DstCase, type FaultProfile } from "./dst-case.js";
import { fixtureFor, saveFixture } from "./fixtures.js";
import type { InvariantId, Violation } from "./invariants.js";
import { machineEdges } from "./machine-edges.js";
import { runDirected, type DirectedCase } from "./directed.js";
import { runCase, type CaseReport, type RunCaseOptions } from "./run-case.js";
import { UNREACHABLE } from "./unreachable-edges.js";

export interface CampaignOptions {
  runs: number;
  seed: number;
  faults?: FaultProfile;
  maxTasks?: number;
  /** Where to save shrunk failing cases; null: do not save. */
  fixturesDir?: string | null;
  /** Stop after this many distinct failures (default 3). */
  maxFailures?: number;
  /** Called after each case of the main phase (not while shrinking). */
  progress?: (done: number, runs: number) => void;
  /**
   * Invariants whose violations do not fail a case (nor steer its shrinking): to let a
   * campaign find and shrink another class of bug. A summary that ignored any is never ok.
   */
  ignore?: readonly InvariantId[];
  /** Which of runCase's whole-run checks to make (both by default). */
  checks?: Pick<RunCaseOptions, "determinism" | "replay">;
  /**
   * Directed cases (verify/directed.ts), run before the random ones: each must hold every
   * invariant and take the edges it is kept for, and their transitions count in the coverage.
   */
  directed?: readonly { path: string; directed: DirectedCase }[];
}

export interface CampaignFailure {
  invariant: InvariantId;
  message: string;
  violations: Violation[];
  /** The seed of the fast-check run that found it, and its path (replays it with fc's `path`). */
  seed: number;
  path: string;
  /** Cases tried before it failed, and shrink steps. */
  tried: number;
  shrinks: number;
  fixture: string | null;
  case: DstCase;
}

export interface CampaignSummary {
  ok: boolean;
  seed: number;
  runs: number;
  faults: FaultProfile;
  maxTasks: number;
  /** Invariants not checked (options.ignore). */
  ignored: InvariantId[];
  seconds: number;
  failures: CampaignFailure[];
  totals: Record<string, number>;
  /**
   * Machine transitions the cores took over the campaign (directed cases included), against
   * every edge of each machine: `missing`, the edges not taken that are not known to be out of
   * the simulation's reach; `unreachable`, those that are (verify/unreachable-edges.ts), apart.
   */
  coverage: Record<string, { edges: number; covered: number; missing: string[]; unreachable: string[] }>;
  /** Each directed case: whether every invariant held, and the edges it is kept for that it did not take. */
  directed: { path: string; edges: string[]; holds: boolean; untaken: string[]; violations: Violation[] }[];
}

export async function runCampaign(options: CampaignOptions): Promise<CampaignSummary> {
  const caseOptions: CaseOptions = {
    faults: options.faults ?? DEFAULT_CASE_OPTIONS.faults,
    maxTasks: options.maxTasks ?? DEFAULT_CASE_OPTIONS.maxTasks,
  };
  const maxFailures = options.maxFailures ?? 3;
  const ignored = new Set(options.ignore ?? []);
  const holds = (report: CaseReport): boolean => report.violations.every((v) => ignored.has(v.invariant));
  const began = performance.now();
  const totals: Record<string, number> = {};
  const covered = new Set<string>();
  const failures: CampaignFailure[] = [];
  const directed: CampaignSummary["directed"] = [];
  for (const { path, directed: d } of options.directed ?? []) {
    const { report, untaken } = await runDirected(d);
    for (const edge of report.coverage.keys()) covered.add(edge);
    directed.push({ path, edges: d.edges, holds: report.ok, untaken, violations: report.violations });
  }
  let done = 0;
  let seed = options.seed;
  while (done < options.runs && failures.length < maxFailures) {
    let shrinking = false;
    let ranThisRound = 0;
    const property = fc.asyncProperty(dstCaseArb(caseOptions), async (dstCase) => {
      const report = await runCase(dstCase, options.checks);
      if (!shrinking) {
        ranThisRound += 1;
        done += 1;
        accumulate(totals, covered, report);
        options.progress?.(done, options.runs);
        if (!holds(report)) shrinking = true;
      }
      return holds(report);
    });
    const details = await fc.check(property, { numRuns: options.runs - done, seed });
    if (!details.failed || details.counterexample === null) break;
    const [minimal] = details.counterexample;
    const report = await runCase(minimal);
    const first = report.violations.find((v) => !ignored.has(v.invariant)) ?? { invariant: "crash" as const, at: -1, message: String(details.errorInstance) };
    const found = { seed, path: details.counterexamplePath ?? "", profile: caseOptions.faults };
    const fixture = options.fixturesDir === null || options.fixturesDir === undefined ? null : saveFixture(options.fixturesDir, fixtureFor(minimal, first, found));
    failures.push({
      invariant: first.invariant,
      message: first.message,
      violations: report.violations,
      seed,
      path: found.path,
      tried: ranThisRound,
      shrinks: details.numShrinks,
      fixture,
      case: minimal,
    });
    seed = (seed + 1) >>> 0;
  }
  return {
    ok: failures.length === 0 && ignored.size === 0 && directed.every((d) => d.holds && d.untaken.length === 0),
    seed: options.seed,
    runs: done,
    faults: caseOptions.faults,
    maxTasks: caseOptions.maxTasks,
    ignored: [...ignored],
    seconds: Number(((performance.now() - began) / 1000).toFixed(2)),
    failures,
    totals,
    coverage: coverageOf(covered),
    directed,
  };
}

function accumulate(totals: Record<string, number>, covered: Set<string>, report: CaseReport): void {
  for (const [name, value] of Object.entries(report.stats)) totals[name] = (totals[name] ?? 0) + value;
  totals.cases = (totals.cases ?? 0) + 1;
  for (const edge of report.coverage.keys()) covered.add(edge);
}

export function coverageOf(covered: ReadonlySet<string>): CampaignSummary["coverage"] {
  const out: CampaignSummary["coverage"] = {};
  for (const [machine, edges] of Object.entries(machineEdges())) {
    const notTaken = edges.filter((e) => !covered.has(e));
    const unreachable = notTaken.filter((e) => e in UNREACHABLE);
    out[machine] = { edges: edges.length, covered: edges.length - notTaken.length, missing: notTaken.filter((e) => !(e in UNREACHABLE)), unreachable };
  }
  return out;
}
