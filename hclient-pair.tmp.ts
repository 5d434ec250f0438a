import { LocalCluster } from "./index.js";
import { Client } from "./actors/client.js";
import { ClientRecording } from "./actors/client-recording.js";
const real = ClientRecording.prototype.transition;
const n = 10000;
const cluster = await LocalCluster.start({ workers: 2, functions: { noop: (x: number) => x }, log: { path: "/tmp/hclient-pair.natlog" }, configFile: false });
const c = cluster as any;
const items = Array.from({ length: n }, (_, i) => i);
const modes = ["off", "on", "noref"] as const;
const times: Record<string, number[]> = { on: [], off: [], noref: [] };
for (let rep = 0; rep < 10; rep++) {
  const order = rep % 2 ? [...modes].reverse() : modes;
  for (const mode of order) {
    ClientRecording.prototype.transition = mode === "noref" ? function (this: any, m: any, id: any, e: any, f: any, t: any) { if (e !== "RETAIN" && e !== "RELEASE") real.call(this, m, id, e, f, t); } : real;
    const client = new Client({ cluster: cluster.name, transport: c.bus.connect("client"), heartbeatInterval: cluster.config.heartbeatInterval, log: mode === "off" ? null : c.log, clock: c.clock });
    client.attach();
    const c0 = process.cpuUsage();
    const futs = client.map("noop", items, { pure: false });
    await client.gather(futs);
    for (const f of futs) f.release();
    await cluster.flush();
    await c.log.flush();
    const cu = process.cpuUsage(c0);
    await client.close();
    if (rep > 0) times[mode]!.push((cu.user + cu.system) / 1000);
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
for (const m of modes) console.log(m.padEnd(6), "cpu ms", times[m]!.map((x) => x.toFixed(0)).join(" "), "median", med(times[m]!).toFixed(0), "ratio", (med(times[m]!) / med(times.off!)).toFixed(3));
await cluster.close();
