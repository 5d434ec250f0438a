/** `natsched simulate`: scenario files, config overrides, the written log, exit codes. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../cli/run.js";
import { simulate } from "../sim/simulator.js";
import { readScenarioFile } from "../sim/file.js";
import { readLogSync } from "../log/reader.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-simulate-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const example = new URL("../examples/scenario.json", import.meta.url).pathname;

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(["simulate", ...argv], { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("natsched simulate", () => {
  it("prints the report of the example scenario, the same as the API's", async () => {
    const { code, out, err } = await cli(example);
    expect(err).toBe("");
    expect(code).toBe(0);
    const expected = simulate(await readScenarioFile(example));
    expect(out).toContain(`makespan   ${Number(expected.makespan.toFixed(3))} s (virtual)`);
    expect(out).toContain("tasks      9 (");
    expect(out).toContain(`log        ${expected.log.length} records`);
  });

  it("applies --set overrides through the config parser, and --seed", async () => {
    const { code, out } = await cli(example, "--set", "workerSaturation=inf", "--set", "workStealing=false", "--seed", "7", "--json");
    expect(code).toBe(0);
    const result = JSON.parse(out) as { makespan: number; steals: unknown[] };
    const scenario = await readScenarioFile(example);
    const expected = simulate({ ...scenario, seed: 7, config: { ...scenario.config, workerSaturation: Infinity, workStealing: false } });
    expect(result.makespan).toBe(expected.makespan);
    expect(result.steals).toEqual([]);
    // The example's run steals once; with workStealing=false it does not.
    expect(simulate(scenario).steals.length).toBeGreaterThan(0);
  });

  it("writes a log that replays clean", async () => {
    const path = join(dir, "sim.natlog");
    const { code } = await cli(example, "--log", path);
    expect(code).toBe(0);
    const { records, problems } = readLogSync(path);
    expect(problems).toEqual([]);
    expect(records.length).toBe(simulate(await readScenarioFile(example)).log.length);
    // A simulation ends with its actors still running (no stop records): an open log.
    expect(await runCli(["replay", path], { out: () => {}, err: () => {} })).toBe(1);
    const replayed = await runCli(["replay", path, "--open-ok"], { out: () => {}, err: () => {} });
    expect(replayed).toBe(0);
  });

  it("names an unknown setting with a suggestion, and a malformed flag", async () => {
    const bad = await cli(example, "--set", "workStealin=false");
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('did you mean "workStealing"');
    const malformed = await cli(example, "--set", "workStealing");
    expect(malformed.code).toBe(1);
    expect(malformed.err).toContain("expected key=value");
    const none = await cli();
    expect(none.code).toBe(2);
  });

  it("exits 1 when a task can never run, and lists it", async () => {
    const path = join(dir, "stuck.json");
    writeFileSync(path, JSON.stringify({ workers: [{ name: "a" }], tasks: [{ key: "x", duration: 1, workers: ["nobody"] }] }));
    const { code, out } = await cli(path);
    expect(code).toBe(1);
    expect(out).toMatch(/not done\s+1\n\s+x\s+no-worker/);
  });
});
