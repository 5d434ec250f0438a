/**
 * Deterministic simulation testing (as tests/verify-dst.test.ts) on transports that reorder
 * (NATS re-publishing its window after a reconnect) or deliver twice: every invariant must
 * hold there too (docs/invariants.md, "Network fault profiles"). A failing case is shrunk
 * and saved under tests/fixtures/dst/, which tests/verify-dst.test.ts replays.
 */
import { describe, expect, it } from "vitest";
import { runCampaign } from "../verify/campaign.js";
import { FIXTURES, SEED } from "./support/dst-seed.js";

describe("deterministic simulation testing with network faults", () => {
  it.each(["reorder", "duplicate"] as const)(`random cases with %s faults hold every invariant (seed ${SEED})`, async (faults) => {
    const summary = await runCampaign({ runs: 250, seed: SEED, faults, fixturesDir: FIXTURES, maxFailures: 1 });
    const failures = summary.failures.map((f) => `${f.invariant}: ${f.message} -- shrunk case saved as ${f.fixture}; rerun with npm run verify -- --faults ${faults} --seed ${f.seed}`);
    expect(failures).toEqual([]);
    const t = summary.totals;
    expect(t.lateEnvelopes).toBeGreaterThan(0);
    if (faults === "duplicate") expect(t.duplicatedEnvelopes).toBeGreaterThan(0);
    expect(t.stealsConfirmed).toBeGreaterThan(0);
    // The workers did drop superseded instructions (a late or copied compute-task, an overtaken free-keys).
    expect(t.staleDropped).toBeGreaterThan(0);
  }, 120_000);
});
