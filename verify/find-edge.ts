/**
 * Searches random DST cases for one that takes a machine edge, and shrinks it to a small one
 * (fast-check, the property being "the case does not take it"): to keep as a directed case
 * (verify/directed.ts) an edge campaigns take only rarely.
 *
 *   npx tsx verify/find-edge.ts --edge "wtask: fetch -STALE-> fetch" --faults duplicate --runs 20000 --seed 1 [--save]
 *
 * Prints the case (JSON) and whether every invariant holds on it; --save writes it to
 * tests/fixtures/directed/ (a note on how it takes the edge is to be written there by hand).
 */
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import fc from "fast-check";
import { DEFAULT_DIRECTED_DIR, DIRECTED_FORMAT, saveDirected, type DirectedCase } from "./directed.js";
import { DEFAULT_CASE_OPTIONS, dstCaseArb, FAULT_PROFILES, type FaultProfile } from "./dst-case.js";
import { machineEdges } from "./machine-edges.js";
import { runCase } from "./run-case.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

function fail(message: string): never {
  process.stderr.write(`find-edge: ${message}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  const { values: o } = parseArgs({
    options: {
      edge: { type: "string" },
      faults: { type: "string" },
      runs: { type: "string" },
      seed: { type: "string" },
      "max-tasks": { type: "string" },
      save: { type: "boolean" },
    },
    strict: true,
  });
  const edge = o.edge ?? fail("--edge is required");
  if (!Object.values(machineEdges()).some((edges) => edges.includes(edge))) fail(`${JSON.stringify(edge)} is not an edge of any machine`);
  const faults = (o.faults ?? "fifo") as FaultProfile;
  if (!FAULT_PROFILES.includes(faults)) fail(`--faults must be one of ${FAULT_PROFILES.join(", ")}`);
  const runs = Number(o.runs ?? 10000);
  const seed = Number(o.seed ?? Math.floor(Math.random() * 2 ** 31));
  const maxTasks = Number(o["max-tasks"] ?? DEFAULT_CASE_OPTIONS.maxTasks);
  let tried = 0;
  const property = fc.asyncProperty(dstCaseArb({ faults, maxTasks }), async (dstCase) => {
    tried += 1;
    const report = await runCase(dstCase, { determinism: false, replay: false });
    return !report.coverage.has(edge);
  });
  const details = await fc.check(property, { numRuns: runs, seed });
  if (!details.failed || details.counterexample === null) {
    process.stdout.write(`${JSON.stringify({ edge, found: false, runs, seed, faults })}\n`);
    process.exit(1);
  }
  const [found] = details.counterexample;
  const report = await runCase(found);
  const directed: DirectedCase = {
    format: DIRECTED_FORMAT,
    edges: [edge],
    note: "",
    found: { seed, path: details.counterexamplePath ?? "", profile: faults },
    case: found,
  };
  const saved = o.save ? relative(ROOT, saveDirected(join(ROOT, DEFAULT_DIRECTED_DIR), { ...directed, note: `found by verify/find-edge.ts (${tried} cases tried, ${details.numShrinks} shrinks)` })) : null;
  process.stdout.write(`${JSON.stringify({ edge, found: true, tried, shrinks: details.numShrinks, holds: report.ok, violations: report.violations, saved, directed }, null, 2)}\n`);
}

await main();
