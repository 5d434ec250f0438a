// Compares builds of natsched on NATS back to back: W1 or W2 on a fresh nats-server, scheduler
// and 2 worker processes per run, the client in this process, variants alternating, with
// what a noisy shared machine still lets one compare: CPU per task of each process (from
// /proc/<pid>/stat, all threads), messages and bytes per task through nats-server (its
// /connz monitoring), read/write syscalls per task (/proc/<pid>/io) and sleeps of each main
// thread (voluntary context switches).
//
//   npm run build && node bench/nats-compare.mjs --variants new=.               # this tree's dist/
//   node bench/nats-compare.mjs --variants base=/tmp/base,new=. --wl W1 --n 10000 --reps 3 --rounds 3
//   node bench/nats-compare.mjs --variants new=. --wl W2 --fanin 8 --n 4096
//   node bench/nats-compare.mjs --variants "new=.,nogc=.@--single-threaded-gc"  # node flags for the daemons
//   node bench/nats-compare.mjs --variants new=. --prof /tmp/prof                # --cpu-prof of every daemon
//   node bench/nats-compare.mjs --variants new=. --reps 12 --per-rep             # rate and CPU of each repetition
//   NC_LOGDIR=/tmp/x node bench/nats-compare.mjs --variants "t=.@--trace-deopt"  # each daemon's stdout to /tmp/x
//   GOMAXPROCS=1 node bench/nats-compare.mjs --variants new=.                     # the server as `npm run bench` runs it on 2 cores
//
// A variant is name=<root>[@<node flags>]: <root> holds dist/ and package.json (a copy of an
// older build works if it can resolve node_modules, e.g. through a node_modules symlink). The
// log is on unless --log off (each daemon writes its own file, as in `npm run bench`); the
// workers' queue is Dask's default unless --sat (workerSaturation) says otherwise.
// The nats-server inherits this process's environment (GOMAXPROCS included). Needs nats-server
// on PATH and Linux /proc. Not part of `npm run bench`: a tool for rounds
// of transport work (docs/performance.md).
import { spawn } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const arg = (k, d) => {
  const i = process.argv.indexOf(`--${k}`);
  return i < 0 ? d : process.argv[i + 1];
};
const variants = arg("variants", "new=.")
  .split(",")
  .map((s) => {
    const [name, spec] = [s.slice(0, s.indexOf("=")), s.slice(s.indexOf("=") + 1)];
    const [root, flags] = spec.split("@");
    return { name, root: resolve(root), flags: flags ? flags.split(" ") : [] };
  });
const wl = arg("wl", "W1");
const N = Number(arg("n", wl === "W1" ? 10000 : 4096));
const reps = Number(arg("reps", 3));
const rounds = Number(arg("rounds", 1));
const log = arg("log", "on") === "on";
const prof = arg("prof", "");
const sat = arg("sat", "1.1");
const fanin = Number(arg("fanin", 2));
const perRep = process.argv.includes("--per-rep");

const scratch = mkdtempSync(join(tmpdir(), "natsched-compare-"));
const functionsFile = join(scratch, "functions.mjs");
writeFileSync(functionsFile, "export const noop = (x) => x;\nexport const one = () => 1;\nexport const add = (...xs) => xs.reduce((a, b) => a + b, 0);\n");

const children = new Set();
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL");
  rmSync(scratch, { recursive: true, force: true });
});
const tracked = (...a) => {
  const c = spawn(...a);
  children.add(c);
  c.once("exit", () => children.delete(c));
  return c;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const freePort = () =>
  new Promise((res) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => res(p));
    });
  });
const stat = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const r = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return { cpuMs: (Number(r[11]) + Number(r[12])) * 10, sysMs: Number(r[12]) * 10 };
};
const io = (pid) => {
  const t = readFileSync(`/proc/${pid}/io`, "utf8");
  return { r: Number(/syscr:\s+(\d+)/.exec(t)[1]), w: Number(/syscw:\s+(\d+)/.exec(t)[1]) };
};
// CPU ms of each thread of a process, summed by thread name (main "node", "V8 DefaultWorke"...).
const threadCpu = (pid) => {
  const out = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = tid === String(pid) ? "main" : f.slice(f.indexOf("(") + 1, f.lastIndexOf(")")).trim();
      const r = f.slice(f.lastIndexOf(")") + 2).split(" ");
      out[name] = (out[name] ?? 0) + (Number(r[11]) + Number(r[12])) * 10;
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
};
const sleeps = (pid) => Number(/\nvoluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

function daemon(v, args, ready, name) {
  const p = tracked(process.execPath, [...v.flags, ...(prof ? ["--cpu-prof", `--cpu-prof-dir=${prof}/${name}`] : []), join(v.root, "dist/cli/main.js"), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NATSCHED_SCHEDULER__WORKER_SATURATION: sat },
  });
  let out = "";
  p.stderr.on("data", (d) => (out = (out + d).slice(-4000)));
  if (process.env.NC_LOGDIR) {
    const file = join(process.env.NC_LOGDIR, `${name}.out`);
    p.stdout.on("data", (d) => appendFileSync(file, d));
  }
  return new Promise((res, rej) => {
    p.stdout.on("data", (d) => {
      out += d;
      if (ready.test(out)) res(p);
    });
    p.once("exit", (c) => rej(new Error(`${name} exited ${c}: ${out}`)));
  });
}

async function run(v) {
  const port = await freePort();
  const mport = await freePort();
  const url = `nats://127.0.0.1:${port}`;
  const server = tracked("nats-server", ["-a", "127.0.0.1", "-p", String(port), "-m", String(mport)], { stdio: "ignore" });
  await sleep(300);
  const connz = async () => {
    const j = await (await fetch(`http://127.0.0.1:${mport}/connz?limit=100`)).json();
    return Object.fromEntries(j.connections.map((c) => [c.name ?? `cid${c.cid}`, c]));
  };
  const cluster = `cmp${Math.random().toString(16).slice(2, 8)}`;
  const common = ["--nats", url, "--cluster", cluster];
  const logs = join(scratch, cluster);
  mkdirSync(logs, { recursive: true });
  const scheduler = await daemon(v, ["scheduler", ...common, ...(log ? ["--log", join(logs, "s.natlog")] : ["--no-log"])], /natsched scheduler: cluster/, `${v.name}-scheduler`);
  const workers = await Promise.all(
    [0, 1].map((i) =>
      daemon(v, ["worker", ...common, "--functions", functionsFile, "--name", `w${i}`, "--nthreads", "1", ...(log ? ["--log", join(logs, `w${i}.natlog`)] : [])], /registered with cluster/, `${v.name}-w${i}`),
    ),
  );
  const { connectClient } = await import(pathToFileURL(join(v.root, "dist/index.js")).href);
  const client = await connectClient({ servers: url, cluster });
  const waitIdle = async () => {
    for (;;) {
      const ws = await client.workers();
      if (ws.every((w) => w.processing === 0 && w.keys === 0)) return;
      await sleep(20);
    }
  };
  const once = async (n) => {
    const t0 = performance.now();
    if (wl === "W1") {
      const fs = client.map("noop", Array.from({ length: n }, (_, i) => i), { pure: false });
      await client.gather(fs);
      const ms = performance.now() - t0;
      for (const f of fs) f.release();
      await waitIdle();
      return { ms, tasks: n };
    }
    // W2 as bench/workloads.ts runs it: leaves one by one, then the tree layer by layer.
    let layer = [];
    for (let i = 0; i < n; i++) layer.push(client.submit("one", [i], { pure: false }));
    let tasks = layer.length;
    const dropped = [];
    while (layer.length > 1) {
      const next = [];
      for (let j = 0; j < layer.length; j += fanin) next.push(client.submit("add", layer.slice(j, j + fanin), { pure: false }));
      dropped.push(layer);
      tasks += next.length;
      layer = next;
    }
    await sleep(0);
    for (const l of dropped) for (const f of l) f.release();
    const result = await layer[0].result();
    const ms = performance.now() - t0;
    if (result !== n) throw new Error(`W2: root is ${result}, expected ${n}`);
    layer[0].release();
    await waitIdle();
    return { ms, tasks };
  };
  await once(wl === "W1" ? 1000 : 512); // warm-up, untimed
  const pids = { sched: scheduler.pid, w0: workers[0].pid, w1: workers[1].pid, srv: server.pid };
  const at = () => ({ z: null, s: Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, { ...stat(p), io: io(p), sleeps: sleeps(p), threads: k === "srv" ? {} : threadCpu(p) }])), client: process.cpuUsage() });
  const z0 = await connz();
  const a = at();
  let tasks = 0;
  const rates = [];
  for (let r = 0; r < reps; r++) {
    const before = perRep ? at() : null;
    const o = await once(N);
    rates.push(Math.round((o.tasks / o.ms) * 1000));
    tasks += o.tasks;
    if (before !== null) {
      const after = at();
      const us = Object.fromEntries(Object.keys(pids).map((k) => [k, Math.round(((after.s[k].cpuMs - before.s[k].cpuMs) * 1000) / o.tasks)]));
      console.log(`  rep ${r + 1}: ${rates[r]} tasks/s, CPU us/task ${JSON.stringify(us)}`);
    }
  }
  const b = at();
  const z1 = await connz();
  const per = (x) => Math.round((x * 1000) / tasks);
  const cpu = Object.fromEntries(Object.keys(pids).map((k) => [k, per(b.s[k].cpuMs - a.s[k].cpuMs)]));
  const cu = process.cpuUsage(a.client);
  cpu.client = Math.round((cu.user + cu.system) / tasks);
  const sys = Object.fromEntries(Object.keys(pids).map((k) => [k, per(b.s[k].sysMs - a.s[k].sysMs)]));
  const syscalls = Object.fromEntries(Object.keys(pids).map((k) => [k, `${((b.s[k].io.r - a.s[k].io.r) / tasks).toFixed(2)}r/${((b.s[k].io.w - a.s[k].io.w) / tasks).toFixed(2)}w`]));
  const wakes = Object.fromEntries(Object.keys(pids).filter((k) => k !== "srv").map((k) => [k, +((b.s[k].sleeps - a.s[k].sleeps) / tasks).toFixed(2)]));
  const threads = Object.fromEntries(
    Object.keys(pids)
      .filter((k) => k !== "srv")
      .map((k) => [k, Object.fromEntries(Object.entries(b.s[k].threads).map(([t, ms]) => [t, per(ms - (a.s[k].threads[t] ?? 0))]).filter(([, v]) => v > 0))]),
  );
  const msgs = {};
  for (const [name, c] of Object.entries(z1)) {
    const before = z0[name];
    if (!before) continue;
    const short = name.replace(/^natsched-/, "").replace(`-${cluster}`, "");
    msgs[short] = `${((c.in_msgs - before.in_msgs) / tasks).toFixed(2)}/${((c.out_msgs - before.out_msgs) / tasks).toFixed(2)} ${Math.round((c.in_bytes - before.in_bytes) / tasks)}B/${Math.round((c.out_bytes - before.out_bytes) / tasks)}B`;
  }
  await client.close();
  for (const p of [...workers, scheduler]) p.kill("SIGTERM");
  await Promise.all([...workers, scheduler].map((p) => (p.exitCode !== null ? undefined : new Promise((r) => p.once("exit", r)))));
  server.kill();
  rmSync(logs, { recursive: true, force: true });
  return { rates, cpu, sys, syscalls, wakes, msgs, threads };
}

console.log(`# ${wl}${wl === "W2" ? ` fan-in ${fanin}` : ""}, ${N} ${wl === "W1" ? "tasks" : "leaves"}, ${reps} reps x ${rounds} rounds, log ${log ? "on" : "off"}, workerSaturation ${sat}; load ${load()}`);
const all = {};
for (let round = 0; round < rounds; round++) {
  for (const v of variants) {
    const r = await run(v);
    (all[v.name] ??= []).push(r);
    console.log(`${v.name.padEnd(8)} tasks/s ${r.rates.join(" ")}   CPU us/task ${JSON.stringify(r.cpu)}   load ${load()}`);
    console.log(`${"".padEnd(8)} of it sys ${JSON.stringify(r.sys)}   main-thread sleeps/task ${JSON.stringify(r.wakes)}`);
    console.log(`${"".padEnd(8)} msgs/task to/from nats-server, bytes ${JSON.stringify(r.msgs)}`);
    console.log(`${"".padEnd(8)} syscalls/task ${JSON.stringify(r.syscalls)}`);
    console.log(`${"".padEnd(8)} CPU us/task by thread ${JSON.stringify(r.threads)}`);
  }
}
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
for (const v of variants) {
  const rs = all[v.name].flatMap((r) => r.rates);
  const cpu = Object.fromEntries(Object.keys(all[v.name][0].cpu).map((k) => [k, median(all[v.name].map((r) => r.cpu[k]))]));
  console.log(`${v.name.padEnd(8)} median ${median(rs)} tasks/s (${Math.min(...rs)}-${Math.max(...rs)}); median CPU us/task ${JSON.stringify(cpu)}`);
}
process.exit(0);
