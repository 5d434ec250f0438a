/**
 * A client on NATS records itself as actor client.<id>: in a file of its own (`log: path`),
 * or in the cluster's JetStream log (the default when the cluster has one). Its log replays
 * clean, and a scheduler that restarts without its state (a new run) shows in the client's
 * records: the announcement it heard, and each future it submitted again (RESUBMIT).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Client } from "../actors/client.js";
import { connectClient } from "../actors/process/connect-client.js";
import { readLogSync } from "../log/reader.js";
import type { InputRecord, LogRecord, TransitionRecord } from "../log/types.js";
import { replay } from "../replay/replay.js";
import { replayAt } from "../replay/replay-at.js";
import { NatsServer } from "./support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "./support/natsched-process.js";

const FUNCTIONS = `${REPO_ROOT}/tests/support/cluster-tasks.ts`;
const POLICY = { NATSCHED_SCHEDULER__WORKER_TTL: "5" };

const dir = mkdtempSync(join(tmpdir(), "natsched-client-log-"));
const servers: NatsServer[] = [];
const processes: NatschedProcess[] = [];
const clients: Client[] = [];

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await Promise.all(processes.map((p) => p.stop("SIGKILL")));
  await Promise.all(servers.map((s) => s.dispose()));
  rmSync(dir, { recursive: true, force: true });
});

async function cluster(jetstream: boolean, name: string, schedulerArgs: string[]) {
  const server = await NatsServer.start({ jetstream });
  servers.push(server);
  const spawn = (label: string, args: string[]) => {
    const p = NatschedProcess.spawn(label, [...args, "--nats", server.url, "--cluster", name], POLICY);
    processes.push(p);
    return p;
  };
  const scheduler = () => spawn(`${name}-scheduler`, ["scheduler", ...schedulerArgs]);
  const first = scheduler();
  await first.waitFor(/natsched scheduler: cluster/, 30_000);
  await spawn(`${name}-w1`, ["worker", "--name", "w1", "--nthreads", "2", "--functions", FUNCTIONS]).waitFor(/registered/, 30_000);
  return { server, first, scheduler };
}

const isTransition = (r: LogRecord): r is TransitionRecord => r.kind === "transition";
const isInput = (r: LogRecord): r is InputRecord => r.kind === "input";

describe("a NATS client's own log", () => {
  it("a file: start, inputs, the futures' transitions, stop; it replays clean, a resubmission after a new run of the scheduler included", async () => {
    const { first, scheduler, server } = await cluster(false, "clog", ["--no-log"]);
    const path = join(dir, "client.natlog");
    const client = await connectClient({ servers: server.url, cluster: "clog", id: "analyst", log: path });
    clients.push(client);
    const done = client.submit<number>("inc", [1], { key: "done-1" });
    expect(await done.result({ timeout: 10_000 })).toBe(2);
    const slow = client.submit<number>("slowInc", [5, 1500], { key: "slow-5" });
    await new Promise((resolve) => setTimeout(resolve, 300));

    // Killed without a log to resume from: the next scheduler is a new run.
    expect(await first.stop("SIGKILL")).toBe(-1);
    const second = scheduler();
    await second.waitFor(/natsched scheduler: cluster clog/, 30_000);
    expect(await slow.result({ timeout: 30_000 })).toBe(6);
    expect(await done.result({ timeout: 10_000 })).toBe(2);
    await client.close();

    const { records, problems } = readLogSync(path);
    expect(problems).toEqual([]);
    expect(new Set(records.map((r) => r.actor))).toEqual(new Set(["client.analyst"]));
    expect(records[0]).toMatchObject({ kind: "start", role: "client", init: { id: "analyst", cluster: "clog" } });
    expect(records.at(-1)!.kind).toBe("stop");
    const ops = new Set(records.filter(isInput).map((r) => r.event.op));
    for (const op of ["attach", "retain", "submit", "answered", "reports", "gather", "scheduler-started", "client-keys", "close"]) expect(ops).toContain(op);
    const story = (key: string) => records.filter(isTransition).filter((r) => r.id === key).map((r) => `${r.event}:${r.to}`);
    // Both futures were submitted again to the new run; the finished one went back to pending.
    expect(story("done-1")).toEqual(["IN_MEMORY:finished", "RESUBMIT:pending", "IN_MEMORY:finished"]);
    expect(story("slow-5")).toEqual(["RESUBMIT:pending", "IN_MEMORY:finished"]);
    // The resubmission is the client-keys answer's doing, and it sent update-graph again.
    const resubmit = records.filter(isTransition).find((r) => r.event === "RESUBMIT")!;
    const cause = records.filter((r) => r.kind !== "transition" && r.seq < resubmit.seq).at(-1) as InputRecord;
    expect(cause.event.op).toBe("client-keys");

    const result = await replay(path);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.actors["client.analyst"]).toMatchObject({ role: "client", stopped: true, transitions: records.filter(isTransition).length });
    expect(result.actors["client.analyst"]!.sent.request).toBeGreaterThanOrEqual(2);
  }, 90_000);

  it("by default goes to the cluster's JetStream log when the scheduler logs there, beside the other actors, and replays", async () => {
    const { server } = await cluster(true, "jlog", []);
    const client = await connectClient({ servers: server.url, cluster: "jlog", id: "jsclient" });
    clients.push(client);
    expect(await client.gather(client.map<number>("inc", [1, 2, 3]), { timeout: 10_000 })).toEqual([2, 3, 4]);
    await client.close();

    const result = await replayAt(`${server.url}/jlog`);
    expect(result.ok).toBe(true);
    expect(result.actors["client.jsclient"]).toMatchObject({ role: "client", stopped: true });
    expect(result.actors["client.jsclient"]!.transitions).toBe(3);
    expect(result.actors["scheduler"]!.divergence).toBeUndefined();

    // Opted out: nothing of that client in the log.
    const quiet = await connectClient({ servers: server.url, cluster: "jlog", id: "quiet", log: false });
    clients.push(quiet);
    expect(await quiet.submit<number>("inc", [7]).result({ timeout: 10_000 })).toBe(8);
    await quiet.close();
    expect((await replayAt(`${server.url}/jlog`)).actors["client.quiet"]).toBeUndefined();
  }, 90_000);
});
