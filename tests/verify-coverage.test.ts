/**
 * Every edge of every machine is taken by the deterministic simulation: a campaign of a fixed
 * seed and size under each fault profile, with the directed cases of tests/fixtures/directed
 * (verify/directed.ts), takes every edge but those verify/unreachable-edges.ts lists as out
 * of the simulation's reach, with the reason. Edges the definitions dropped (REMOVED) stay
 * out of them. The long campaigns (`npm run verify`) report the same coverage.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCampaign } from "../verify/campaign.js";
import { DEFAULT_DIRECTED_DIR, loadDirected } from "../verify/directed.js";
import { FAULT_PROFILES } from "../verify/dst-case.js";
import { machineEdges } from "../verify/machine-edges.js";
import { REMOVED, UNREACHABLE } from "../verify/unreachable-edges.js";
import { REPO_ROOT } from "./support/natsched-process.js";

const SEED = 5;
/** Cases per fault profile: invariants are checked on each, determinism and replay by tests/verify-dst.test.ts. */
const RUNS = 200;

describe("machine edge coverage", () => {
  it("the unreachable edges are edges of the definitions; the removed ones are not", () => {
    const all = new Set(Object.values(machineEdges()).flat());
    expect(Object.keys(UNREACHABLE).filter((edge) => !all.has(edge))).toEqual([]);
    expect(Object.keys(REMOVED).filter((edge) => all.has(edge))).toEqual([]);
    expect(Object.keys(REMOVED).length).toBeGreaterThan(0);
  });

  it("a fixed campaign under every fault profile, with the directed cases, takes every edge not listed as unreachable", async () => {
    const directed = loadDirected(join(REPO_ROOT, DEFAULT_DIRECTED_DIR));
    expect(directed.length).toBeGreaterThan(0);
    const notTaken = new Map<string, Set<string>>();
    for (const faults of FAULT_PROFILES.filter((p) => p !== "none")) {
      const summary = await runCampaign({
        runs: RUNS,
        seed: SEED,
        faults,
        fixturesDir: null,
        checks: { determinism: false, replay: false },
        // Once: their edges count for the union.
        directed: faults === "fifo" ? directed : [],
      });
      expect(summary.failures.map((f) => `${f.invariant}: ${f.message}`)).toEqual([]);
      // Each directed case holds every invariant and still takes the edges it is kept for.
      expect(summary.directed.filter((d) => !d.holds || d.untaken.length > 0)).toEqual([]);
      for (const [machine, { missing }] of Object.entries(summary.coverage)) {
        const before = notTaken.get(machine);
        notTaken.set(machine, before === undefined ? new Set(missing) : new Set(missing.filter((e) => before.has(e))));
      }
    }
    expect(Object.fromEntries([...notTaken].map(([machine, edges]) => [machine, [...edges]]))).toEqual({ task: [], wtask: [], worker: [], scheduler: [] });
  });
});
