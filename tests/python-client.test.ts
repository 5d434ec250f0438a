/**
 * A client in another language: examples/python_client.py (nats-py, written from
 * docs/protocol.md) against a real nats-server, scheduler and worker. It gets the results of
 * a two-task graph, the typed errors of a failing task (and its dependent) and of a refused
 * graph, prints what the docs show, and leaves the scheduler and the worker holding nothing.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { ramp } from "./support/cluster-tasks.js";
import { NatsServer } from "./support/nats-server.js";
import { INSTALL_COMMAND, pythonWithNats, REPO_ROOT } from "./support/python.js";

const run = promisify(execFile);
const CLUSTER = "py";
const SCRIPT = join(REPO_ROOT, "examples", "python_client.py");
let python: string;
let server: NatsServer;
let scheduler: SchedulerProcess;
let worker: WorkerProcess;
let nc: NatsConnection;

beforeAll(async () => {
  python = await pythonWithNats();
  // A small max_payload, so that a result of 100,000 numbers comes in chunks.
  server = await NatsServer.start({ config: "max_payload: 262144\n" });
  scheduler = await SchedulerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, log: false, configFile: false });
  // The functions module the docs' example names, run on executor threads as `natsched worker` does.
  worker = await WorkerProcess.start({ nats: { servers: server.url }, cluster: CLUSTER, name: "w1", nthreads: 2, functions: [join(REPO_ROOT, "examples", "python_client_tasks.mjs"), { ramp }], configFile: false });
  nc = await connect({ servers: server.url });
}, 180_000);

afterAll(async () => {
  await nc?.close();
  await worker?.close();
  await scheduler?.close();
  await server?.dispose();
});

async function ask<T>(subject: string, body: unknown = ""): Promise<T> {
  return (await nc.request(subject, typeof body === "string" ? body : JSON.stringify(body), { timeout: 5000 })).json<T>();
}

/** The script's output as docs/protocol.md, "A client in another language", shows it. */
function documentedOutput(): string {
  const doc = readFileSync(join(REPO_ROOT, "docs", "protocol.md"), "utf8");
  const section = doc.slice(doc.indexOf("## A client in another language"));
  return /prints a JSON line per wanted key[^`]*```\n([\s\S]*?)```/.exec(section)![1]!.trim();
}

/** What the scheduler and the worker still hold, asked until both hold nothing or `ms` passed. */
async function leftBehind(ms: number): Promise<{ scheduler: Record<string, number>; worker: { tasks: Record<string, number>; stored: number } }> {
  const deadline = Date.now() + ms;
  for (;;) {
    const status = await ask<{ tasks: Record<string, number> }>(`natsched.${CLUSTER}.query`, { op: "status" });
    const { tasks, stored } = await ask<{ tasks: Record<string, number>; stored: number }>(`natsched.${CLUSTER}.status.worker.w1`);
    const left = { scheduler: status.tasks, worker: { tasks, stored } };
    if ((Object.keys(tasks).length === 0 && stored === 0 && Object.keys(status.tasks).length === 0) || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a Python client speaking the documented protocol", () => {
  it("gets results and typed errors, then leaves nothing behind", async () => {
    const { stdout, stderr } = await run(python, [SCRIPT, "--nats", server.url, "--cluster", CLUSTER], { cwd: REPO_ROOT, timeout: 60_000 });
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as unknown);
    expect(lines, stderr).toEqual([
      { key: "py-inc", result: 2 },
      { key: "py-add", result: 12 },
      { key: "py-check", failedKey: "py-check", error: { name: "ValidationError", code: "NEGATIVE", message: "-1 is negative" } },
      { key: "py-after-check", failedKey: "py-check", error: { name: "ValidationError", code: "NEGATIVE", message: "-1 is negative" } },
      {
        refused: "py-nowhere",
        error: { name: "UnknownFunctionError", code: "UNKNOWN_FUNCTION", message: expect.stringContaining("no_such_function") },
      },
    ]);
    expect(stdout.trim(), "the output docs/protocol.md shows").toBe(documentedOutput());

    // It released its keys and left: the scheduler forgot every task, and the worker freed
    // the results and the kept failure. Asked within 5 s, under the 10 s clientReleaseGrace:
    // a client that never left would still hold its keys.
    const left = await leftBehind(5_000);
    expect(left).toEqual({ scheduler: {}, worker: { tasks: {}, stored: 0 } });
  }, 90_000);

  it("ignores fields and ops it does not know, joins fragments, and pulls a large result in chunks", async () => {
    const { stdout, stderr } = await run(python, [join(REPO_ROOT, "tests", "support", "python_client_checks.py"), "--nats", server.url, "--cluster", CLUSTER], { cwd: REPO_ROOT, timeout: 60_000 });
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as unknown);
    expect(lines, stderr).toEqual([
      { check: "unknown fields and fragments", ok: true },
      { check: "result in chunks", chunks: true, length: 100_000, last: 99_999 },
    ]);
    expect(await leftBehind(5_000)).toEqual({ scheduler: {}, worker: { tasks: {}, stored: 0 } });
  }, 90_000);

  it("without a Python to make the venv, fails saying the command that installs it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "natsched-nopy-"));
    try {
      const made = pythonWithNats({ chosen: undefined, venv: join(dir, ".venv-test"), python3: join(dir, "no-python3") });
      await expect(made).rejects.toThrow(INSTALL_COMMAND);
      await expect(pythonWithNats({ chosen: join(dir, "no-python") })).rejects.toThrow(/cannot import nats: install it with `.*-m pip install nats-py`/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
