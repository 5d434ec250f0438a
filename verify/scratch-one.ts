import { readFileSync } from "node:fs";
import { runCase } from "./run-case.js";
const c = JSON.parse(readFileSync(process.argv[2]!, "utf8"));
if (process.argv[3]) Object.assign(c.scenario.faults, JSON.parse(process.argv[3]));
const r = await runCase(c);
console.log(r.ok, JSON.stringify(r.violations.slice(0, 4)));
