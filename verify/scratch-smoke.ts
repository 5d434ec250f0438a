import fc from "fast-check";
import { dstCaseArb } from "./dst-case.js";
import { runCase } from "./run-case.js";
const profile = (process.argv[2] ?? "none") as any;
const n = Number(process.argv[3] ?? 100);
const cases = fc.sample(dstCaseArb({ faults: profile, maxTasks: 40 }), { numRuns: n, seed: Number(process.argv[4] ?? 1) });
const byInv = new Map<string, number>();
const began = performance.now();
let first: any = null;
for (const c of cases) {
  const r = await runCase(c);
  for (const v of r.violations) { byInv.set(v.invariant, (byInv.get(v.invariant) ?? 0) + 1); }
  if (!r.ok && first === null) first = { c, v: r.violations.slice(0, 6) };
}
console.log(((performance.now() - began) / n).toFixed(1), "ms/case", Object.fromEntries(byInv));
if (first) console.log(JSON.stringify(first.v, null, 1));
