/**
 * No silent ends: a log whose actors have no stop record after their start (a writer that
 * crashed between two batch writes, or is still writing) is an "open" problem for `replay`
 * and `natsched log`, with exit 1; `--open-ok` / `openOk` accepts it.
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { runCli } from "../cli/run.js";
import { FileLogSink } from "../log/file-log.js";
import { readLogSync } from "../log/reader.js";
import { replay } from "../replay/replay.js";
import { functions } from "./replay-fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-replay-open-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const closed = join(dir, "closed.natlog");
const live = join(dir, "live.natlog");
const afterKill = join(dir, "after-kill.natlog");

/** The client's actor (client.<id>): it too is open while the cluster runs. */
let clientActor = "";

beforeAll(async () => {
  const sink = await FileLogSink.open(closed);
  const cluster = await LocalCluster.start({ workers: 2, functions, log: sink, configFile: false });
  const client = cluster.client();
  clientActor = `client.${client.id}`;
  const xs = client.map<number>("inc", [1, 2, 3, 4]);
  await client.gather(xs);
  await sink.flush();
  // A copy of the log as it stands while the cluster runs: whole frames, no stop record.
  copyFileSync(closed, live);
  cluster.killWorker("worker-1");
  await client.gather([client.submit<number>("inc", [5])]);
  await sink.flush();
  copyFileSync(closed, afterKill);
  await cluster.close();
}, 30_000);

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("a log whose actors did not stop", () => {
  it("a closed cluster's log has a stop record for every actor and replays ok", async () => {
    const result = await replay(closed);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(Object.values(result.actors).every((a) => a.stopped)).toBe(true);
    expect((await cli("log", closed)).code).toBe(0);
  });

  it("a log cut at a frame boundary while the cluster runs: every actor is open, exit 1", async () => {
    expect(readLogSync(live).problems).toEqual([]); // nothing the frames themselves show
    const result = await replay(live);
    expect(result.ok).toBe(false);
    expect(result.complete).toBe(false);
    expect(result.problems.map((p) => `${p.kind} ${p.actor}`)).toEqual([`open ${clientActor}`, "open scheduler", "open worker.worker-0", "open worker.worker-1"]);
    expect(result.problems[1]!.message).toMatch(/^scheduler has no stop record after its start \(#0\): the writer stopped without closing the log/);
    // The transitions themselves all replay.
    expect(Object.values(result.actors).every((a) => a.divergence === undefined && a.halted === undefined)).toBe(true);

    const replayed = await cli("replay", live);
    expect(replayed.code).toBe(1);
    expect(replayed.err).toContain("open");
    const info = await cli("log", live);
    expect(info.code).toBe(1);
    expect(info.out).toContain("4 problem(s):");
    expect(info.out).toContain("open: worker.worker-0 has no stop record");
  });

  it("--open-ok / openOk accepts a log still being written", async () => {
    expect((await replay(live, { openOk: true })).ok).toBe(true);
    expect((await replay(live, { openOk: true, threads: 2 })).ok).toBe(true);
    expect((await cli("replay", live, "--open-ok")).code).toBe(0);
    expect((await cli("log", live, "--open-ok")).code).toBe(0);
    expect((await cli("replay", "--help")).out + (await cli("replay", "--help")).err).toContain("--open-ok");
  });

  it("a killed worker has its stop record (reason killed): only the running actors are open", async () => {
    const records = readLogSync(afterKill).records;
    expect(records.find((r) => r.actor === "worker.worker-1" && r.kind === "stop")).toMatchObject({ reason: "killed" });
    const one = await replay(afterKill);
    expect(one.problems.map((p) => `${p.kind} ${p.actor}`)).toEqual([`open ${clientActor}`, "open scheduler", "open worker.worker-0"]);
    const split = await replay(afterKill, { threads: 2 });
    expect(split.problems).toEqual(one.problems);
  });

  it("one actor's log cut before its stop record: that actor alone is open", async () => {
    const records = readLogSync(closed).records;
    expect((await replay(records)).problems).toEqual([]);
    const stop = records.findIndex((r) => r.actor === "worker.worker-0" && r.kind === "stop");
    const cut = records.filter((r, i) => !(i >= stop && r.actor === "worker.worker-0"));
    expect((await replay(cut)).problems.map((p) => `${p.kind} ${p.actor}`)).toEqual(["open worker.worker-0"]);
  });

  it("a start after a stop opens the actor again: its last run must stop too", async () => {
    const records = readLogSync(closed).records;
    const mine = records.filter((r) => r.actor === "worker.worker-0");
    const restart = { ...mine[0]!, seq: mine[mine.length - 1]!.seq + 1 };
    const result = await replay([...records, restart]);
    expect(result.problems.map((p) => `${p.kind} ${p.actor} ${p.seq}`)).toEqual([`open worker.worker-0 ${restart.seq}`]);
  });
});
