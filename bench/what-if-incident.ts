/**
 * What-if with the config unchanged on an incident about the size of issue 23's (4 workers x 2
 * threads, about 3,000 tasks, data scattered to one worker, failing tasks, a worker killed
 * mid-run, stealing on): records it with LocalCluster, then prints `natsched what-if`'s table.
 *
 *   npx tsx bench/what-if-incident.ts [repetitions]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readLogSync } from "../log/reader.js";
import { formatWhatIf } from "../tools/what-if-format.js";
import { whatIf } from "../tools/what-if.js";
import { FULL_INCIDENT, recordIncident } from "../tests/support/recorded-runs.js";

const repetitions = Number(process.argv[2] ?? 1);
const dir = mkdtempSync(join(tmpdir(), "natsched-what-if-incident-"));
try {
  const ratios: number[] = [];
  for (let i = 0; i < repetitions; i++) {
    const path = join(dir, `incident-${i}.natlog`);
    await recordIncident(path, FULL_INCIDENT);
    const result = whatIf(readLogSync(path).records);
    console.log(formatWhatIf(result, `incident ${i + 1}`), "\n");
    ratios.push(result.ratio);
  }
  console.log(`ratios: ${ratios.map((r) => r.toFixed(3)).join(" ")}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
