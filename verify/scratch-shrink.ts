import { writeFileSync } from "node:fs";
import { runCampaign } from "./campaign.js";
const s = await runCampaign({ runs: Number(process.argv[3] ?? 500), seed: Number(process.argv[4] ?? 7), faults: (process.argv[2] ?? "none") as any, fixturesDir: null, maxFailures: 1 });
for (const f of s.failures) { console.log(JSON.stringify(f.violations, null, 1)); writeFileSync("/tmp/case1.json", JSON.stringify(f.case)); console.log(JSON.stringify(f.case)); }
console.log(s.seconds, s.runs, JSON.stringify(s.totals));
