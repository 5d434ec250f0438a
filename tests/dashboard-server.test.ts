/**
 * The dashboard's server over a recorded run, through its JSON routes: the cluster at a cut
 * is the one `natsched inspect --at` shows (the same cut as replay --until), bad requests get
 * a clear error, and it answers GET only.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { runCli } from "../cli/run.js";
import { recordedLogModel } from "../dashboard/server/recorded-log.js";
import { startDashboard, type Dashboard } from "../dashboard/server/server.js";
import { readLogSync } from "../log/reader.js";

let dir: string;
let log: string;
let dashboard: Dashboard;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "natsched-dash-server-"));
  log = join(dir, "run.natlog");
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 2, functions: { nap: async (i: number) => (await sleep(5 + (i % 4)), i) }, log: { path: log }, configFile: false });
  const client = cluster.client();
  await client.gather(Array.from({ length: 40 }, (_, i) => client.submit<number>("nap", [i])));
  await cluster.close();
  dashboard = await startDashboard((await recordedLogModel(log)).model);
}, 60_000);

afterAll(async () => {
  await dashboard?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function get(path: string, init?: RequestInit): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(new URL(path, dashboard.url), init);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function inspect(at: string): Promise<{ workers: { name: string; status: string; executing: string[]; processing: number }[] }> {
  const out: string[] = [];
  expect(await runCli(["inspect", log, "--at", at, "--json"], { out: (t) => out.push(t), err: () => undefined })).toBe(0);
  return JSON.parse(out.join("\n"));
}

describe("the dashboard's server", () => {
  it("binds 127.0.0.1 by default", () => {
    expect(new URL(dashboard.url).hostname).toBe("127.0.0.1");
  });

  it("shows the cluster at a cut as natsched inspect --at does (scheduler seq, actor:seq, seconds)", async () => {
    const records = readLogSync(log).records;
    const mid = records.filter((r) => r.actor === "scheduler" && r.kind === "input")[40]!;
    const worker = records.filter((r) => r.actor === "worker.worker-1" && r.kind === "input")[20]!;
    const cuts: [string, string][] = [
      [`seq=${mid.seq}`, String(mid.seq)],
      [`seq=worker.worker-1:${worker.seq}`, `worker.worker-1:${worker.seq}`],
      [`t=${(mid.t - records[0]!.t).toFixed(6)}`, `+${(mid.t - records[0]!.t).toFixed(6)}`],
    ];
    for (const [query, at] of cuts) {
      const { status, body } = await get(`/api/at?${query}`);
      expect(status).toBe(200);
      const shown = (body.workers as { name: string; status: string; executing: string[]; processing: number }[]).map((w) => ({ name: w.name, status: w.status, executing: w.executing, processing: w.processing }));
      const inspected = (await inspect(at)).workers.map((w) => ({ name: w.name, status: w.status, executing: w.executing, processing: w.processing }));
      expect(shown, query).toEqual(inspected);
    }
  });

  it("answers a bad request with 400 and what is wrong, a missing page or key with 404, anything but GET with 405", async () => {
    for (const query of ["seq=abc", "index=-1", "t=soon", ""]) {
      const { status, body } = await get(`/api/at?${query}`);
      expect(status, query).toBe(400);
      expect(typeof body.error).toBe("string");
    }
    const unknown = await get("/api/story?key=no-such-key");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toContain("no-such-key");
    expect((await get("/api/story")).status).toBe(400);
    expect((await get("/api/nothing")).status).toBe(404);
    expect((await get("/api/summary", { method: "POST", body: "{}" })).status).toBe(405);
  });
});
