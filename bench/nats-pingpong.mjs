// The NATS transport alone: two NatsTransports of one build in one process, `k` envelopes
// in flight between them through a fresh nats-server, a W1-sized task-finished envelope each
// way; prints this process's CPU per round trip (2 publishes and 2 deliveries, headers,
// de-duplication and ordering included). Builds alternate, so they share the machine's state.
//
//   npm run build && node bench/nats-pingpong.mjs new=. [base=/tmp/base] [--n 20000] [--k 8] [--rounds 4]
//
// (see bench/nats-compare.mjs for what a build root is; docs/performance.md, Tools)
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const arg = (k, d) => {
  const i = process.argv.indexOf(`--${k}`);
  return i < 0 ? d : process.argv[i + 1];
};
const variants = process.argv
  .slice(2)
  .filter((a) => a.includes("=") && !a.startsWith("--"))
  .map((s) => [s.slice(0, s.indexOf("=")), resolve(s.slice(s.indexOf("=") + 1))]);
const N = Number(arg("n", 20000));
const K = Number(arg("k", 8));
const rounds = Number(arg("rounds", 4));
const port = await new Promise((res) => {
  const s = createServer();
  s.listen(0, "127.0.0.1", () => {
    const p = s.address().port;
    s.close(() => res(p));
  });
});
const server = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
process.on("exit", () => server.kill());
await new Promise((r) => setTimeout(r, 400));
const url = `nats://127.0.0.1:${port}`;
const envelope = (i) => ({
  v: 1,
  from: "worker.w0",
  ops: [{ op: "task-finished", key: `noop-0123456789abcdef0123456789a${i}`, worker: "w0", id: "w0-12345678", nbytes: 8, start: 1795594632.9595566, stop: 1795594632.959636, attempt: i }],
});
const modules = {};
for (const [name, root] of variants) modules[name] = await import(pathToFileURL(join(root, "dist/transport/nats.js")).href);
const results = {};
for (let r = 0; r < rounds; r++) {
  for (const [name] of variants) {
    const { NatsTransport } = modules[name];
    const a = await NatsTransport.connect({ servers: url });
    const b = await NatsTransport.connect({ servers: url });
    b.subscribe("pp.req", (m) => b.publish("pp.rep", m.data));
    let got = 0;
    let sent = 0;
    let done;
    const finished = new Promise((r) => (done = r));
    a.subscribe("pp.rep", () => {
      got++;
      if (sent < N) a.publish("pp.req", envelope(sent++));
      if (got === N) done();
    });
    await a.flush();
    await b.flush();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < K; i++) a.publish("pp.req", envelope(sent++));
    await finished;
    const cu = process.cpuUsage(c0);
    const ms = performance.now() - t0;
    (results[name] ??= []).push((cu.user + cu.system) / N);
    console.log(`${name.padEnd(8)} ${((N / ms) * 1000).toFixed(0)} round trips/s, CPU ${((cu.user + cu.system) / N).toFixed(1)} us per round trip (sys ${(cu.system / N).toFixed(1)})`);
    await a.close();
    await b.close();
  }
}
for (const [name] of variants) {
  const v = [...results[name]].sort((x, y) => x - y);
  console.log(`${name.padEnd(8)} median CPU ${v[v.length >> 1].toFixed(1)} us per round trip (${v[0].toFixed(1)}-${v[v.length - 1].toFixed(1)})`);
}
process.exit(0);
