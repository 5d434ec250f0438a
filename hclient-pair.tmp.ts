import { LocalCluster } from "./index.js";
import { Client } from "./actors/client.js";
const n = 10000;
const cluster = await LocalCluster.start({ workers: 2, functions: { noop: (x: number) => x }, log: { path: "/tmp/hclient-pair.natlog" }, configFile: false });
const c = cluster as any;
function mk(logged: boolean): Client {
  const client = new Client({ cluster: cluster.name, transport: c.bus.connect("client"), heartbeatInterval: cluster.config.heartbeatInterval, log: logged ? c.log : null, clock: c.clock });
  client.attach();
  return client;
}
const items = Array.from({ length: n }, (_, i) => i);
const times: Record<string, number[]> = { on: [], off: [] };
for (let rep = 0; rep < 8; rep++) {
  for (const mode of rep % 2 ? ["on", "off"] : ["off", "on"]) {
    const client = mk(mode === "on");
    const t0 = performance.now();
    const futs = client.map("noop", items, { pure: false });
    await client.gather(futs);
    for (const f of futs) f.release();
    const dt = performance.now() - t0;
    await cluster.flush();
    await client.close();
    if (rep > 0) times[mode]!.push(dt);
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
console.log("client log off ms", times.off.map((x) => x.toFixed(0)).join(" "), "median", med(times.off).toFixed(0));
console.log("client log on  ms", times.on.map((x) => x.toFixed(0)).join(" "), "median", med(times.on).toFixed(0));
console.log("ratio of medians", (med(times.on) / med(times.off)).toFixed(3));
await cluster.close();
