import { readFileSync } from "node:fs";
import { simulate } from "../sim.js";
const c = JSON.parse(readFileSync(process.argv[2]!, "utf8"));
const r = simulate(c.scenario);
for (const rec of r.log) {
  if (rec.kind === "input") console.log(rec.t.toFixed(3), rec.actor, "IN", JSON.stringify(rec.event).slice(0, 200));
  else if (rec.kind === "transition") console.log(rec.t.toFixed(3), rec.actor, "  ", rec.machine, rec.id, rec.from, "-" + rec.event + "->", rec.to, rec.why ? JSON.stringify(rec.why).slice(0, 120) : "");
  else console.log(rec.t.toFixed(3), rec.actor, rec.kind, JSON.stringify((rec as any).init ?? (rec as any).reason ?? "").slice(0, 100));
}
