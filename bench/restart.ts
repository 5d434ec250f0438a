/**
 * How long a scheduler killed after a large run takes to be back and answering clients.
 *
 * A nats-server of its own, a `natsched scheduler` process with its log in JetStream and 2
 * worker processes x 1 thread; W1: `client.map("noop", range(N), { pure: false })`, gathered
 * (the futures stay held). The scheduler at rest snapshots its core (actors/process/
 * scheduler-snapshots.ts); once the snapshot is stored (`snapshotStored`: seconds after the
 * gather; --kill-at-once: no wait, the restart then re-runs what no snapshot covers), the
 * scheduler is SIGKILLed and the same command started again, and from the kill on, in parallel:
 *   - `status`: a request on the query subject every 50 ms (200 ms timeout) until one is answered;
 *   - `submit`: a client's `submit("noop", ...)` issued at the kill, until its result comes;
 *   - `resumed`, `resynced`: when the new process prints that it resumed, that the workers answered.
 * Prints one JSON object (seconds from the kill), and writes it to --json <file> if given.
 *
 *   node --import tsx bench/restart.ts [--n 100000] [--json out.json] [--prof <dir>] [--kill-at-once] [--dist] [--verbose]
 *
 * --dist: the daemons run the built CLI (`npm run build` first), as `natsched` runs once
 * installed; by default they run the sources through tsx, whose start-up adds to every time.
 *
 * --prof <dir>: the restarted scheduler runs with `--cpu-prof --cpu-prof-dir <dir>` (the
 * profile is written when it exits: the bench stops it with SIGTERM at the end).
 */
import { spawn as spawnChild } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectClient } from "../index.js";
import { NatsTransport } from "../transport/nats.js";
import { NatsServer } from "../tests/support/nats-server.js";
import { NatschedProcess, REPO_ROOT } from "../tests/support/natsched-process.js";

const arg = (name: string, fallback?: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : process.argv[i + 1];
};
const n = Number(arg("n", "100000"));
const jsonOut = arg("json");
const profDir = arg("prof");
const killAtOnce = process.argv.includes("--kill-at-once");
// The built CLI (npm run build: dist/), as an operator runs it; by default the sources through tsx, as the tests do.
const dist = process.argv.includes("--dist");
const CLUSTER = "restart";

// A server sharing 2 cores with the daemons runs better on one OS thread (docs/nats.md).
if (cpus().length <= 2 && process.env.GOMAXPROCS === undefined) process.env.GOMAXPROCS = "1";
const dir = mkdtempSync(join(tmpdir(), "natsched-restart-"));
const functions = join(dir, "tasks.mjs");
writeFileSync(functions, "export const noop = (x) => x;\n");
const server = await NatsServer.start();
const common = ["--nats", server.url, "--cluster", CLUSTER];
const schedulerArgs = ["scheduler", ...common, "--log", "jetstream"];
const processes: NatschedProcess[] = [];
const spawn = (label: string, args: string[]) => {
  const nodeArgs = (process.env.NATSCHED_NODE_ARGS ?? "").split(" ").filter((a) => a.length > 0);
  const p = dist
    ? new NatschedProcess(label, spawnChild(process.execPath, [...nodeArgs, join(REPO_ROOT, "dist", "cli", "main.js"), ...args], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] }))
    : NatschedProcess.spawn(label, args);
  processes.push(p);
  return p;
};

const seconds = (from: number) => Number(((performance.now() - from) / 1000).toFixed(3));

try {
  const first = spawn("scheduler", schedulerArgs);
  await first.waitFor(/natsched scheduler: cluster/);
  const workers = ["a", "b"].map((name) => spawn(name, ["worker", ...common, "--name", name, "--nthreads", "1", "--functions", functions]));
  await Promise.all(workers.map((w) => w.waitFor(/registered/)));
  const client = await connectClient({ servers: server.url, cluster: CLUSTER, requestTimeout: 120_000 });
  const probe = await NatsTransport.connect({ servers: server.url, name: "restart-probe" });

  const runStart = performance.now();
  const futures = client.map("noop", Array.from({ length: n }, (_, i) => i), { pure: false });
  const results = await client.gather(futures);
  if (results.length !== n || results[n - 1] !== n - 1) throw new Error("wrong results");
  const runSeconds = seconds(runStart);
  const jsm = await jetstreamManager(probe.nc);
  const gathered = performance.now();
  const gatheredAt = Date.now();
  let snapshotStored: number | null = null;
  if (!killAtOnce) {
    while (snapshotStored === null && performance.now() - gathered < 120_000) {
      const pointer = await jsm.streams.getMessage(`NATSCHED_SNAPSHOT_${CLUSTER}`, { last_by_subj: `natsched.${CLUSTER}.snapshot.scheduler` }).catch(() => null);
      // A snapshot taken after the run: at rest.
      if (pointer !== null && (JSON.parse(pointer.string()) as { created: number }).created > gatheredAt) snapshotStored = seconds(gathered);
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const stream = await jsm.streams.info(`NATSCHED_LOG_${CLUSTER}`, { subjects_filter: `natsched.${CLUSTER}.log.scheduler` });

  expect((await first.stop("SIGKILL")) === -1, "the scheduler did not die of SIGKILL");
  const killed = performance.now();
  // NatschedProcess takes node flags for its children from this process's environment.
  if (profDir !== undefined) process.env.NATSCHED_NODE_ARGS = `--cpu-prof --cpu-prof-dir ${profDir}`;
  const second = spawn("scheduler-2", schedulerArgs);
  delete process.env.NATSCHED_NODE_ARGS;
  const submitted = client
    .submit<number>("noop", [-1], { pure: false })
    .result()
    .then(() => seconds(killed));
  const statusAnswered = (async () => {
    for (;;) {
      try {
        await probe.request(`natsched.${CLUSTER}.query`, { op: "status" }, { timeout: 200 });
        return seconds(killed);
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  })();
  const resumed = second.waitFor(/resumed from its log/, 300_000).then(() => seconds(killed));
  const resynced = second.waitFor(/resynced:/, 300_000).then(() => seconds(killed));
  const report = {
    bench: "scheduler restart after W1",
    n,
    cli: dist ? "dist" : "tsx",
    runSeconds,
    schedulerLog: { messages: stream.state.messages, bytes: stream.state.bytes },
    snapshotStored,
    secondsFromKill: { resumed: await resumed, status: await statusAnswered, submit: await submitted, resynced: await resynced },
    resumedLine: /resumed from its log[^\n]*/.exec(second.log)?.[0],
  };
  if (process.argv.includes("--verbose")) console.error(second.log);
  const text = JSON.stringify(report, null, 2);
  console.log(text);
  if (jsonOut !== undefined) writeFileSync(jsonOut, `${text}\n`);
  await client.close();
  await probe.close();
} finally {
  await Promise.all(processes.map((p) => p.stop("SIGTERM")));
  await server.dispose();
  rmSync(dir, { recursive: true, force: true });
}

function expect(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}
