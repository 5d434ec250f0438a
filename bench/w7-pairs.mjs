/**
 * Paired W7 CPU runs of two checkouts (or two argument lists), alternating so both see the
 * same load: runs bench/w7-cpu.ts of each variant K times and prints the medians of the
 * processes' CPU beside the executor threads (ms; the worker's less its two busiest threads).
 *
 *   node bench/w7-pairs.mjs K "/work/main:threads 200 20" "/path/to/branch:threads 200 20"
 */
import { execFileSync } from "node:child_process";

const [k, ...variants] = process.argv.slice(2);
const rows = variants.map(() => []);
for (let i = 0; i < Number(k); i++) {
  variants.forEach((variant, j) => {
    const [dir, args] = variant.split(":");
    const out = execFileSync(process.execPath, ["--import", "tsx", "bench/w7-cpu.ts", ...args.split(" ").filter(Boolean)], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    const r = JSON.parse(out.trim().split("\n").pop());
    const workers = Object.keys(r).filter((x) => /^w\d+_ms$/.test(x)).reduce((sum, x) => sum + r[x], 0);
    const executors = Object.keys(r)
      .filter((x) => /_threads_ms$/.test(x))
      .flatMap((x) => r[x].split(" ").map((t) => Number(t.split(":").pop())))
      .sort((a, b) => b - a)
      .slice(0, 2)
      .reduce((a, b) => a + b, 0);
    const row = { ratio: r.ratio, scheduler: r.scheduler_ms, client: r.client_ms, server: r.server_ms, worker: workers - executors };
    row.total = row.scheduler + row.client + row.server + row.worker;
    rows[j].push(row);
    console.error(variant, JSON.stringify(row));
  });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
variants.forEach((variant, j) => {
  const keys = Object.keys(rows[j][0]);
  console.log(variant.padEnd(40), keys.map((key) => `${key} ${median(rows[j].map((r) => r[key])).toFixed(key === "ratio" ? 2 : 0)}`).join("  "));
});
