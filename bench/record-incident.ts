/**
 * Records the incident docs/replay.md's walkthrough explains (tests/support/recorded-runs.ts,
 * FULL_INCIDENT: 4 workers x 2 threads, data scattered to one worker, 16 failing tasks, a
 * worker killed mid-run, stealing on) to a log file you name:
 *
 *   npx tsx bench/record-incident.ts incident.natlog
 */
import { FULL_INCIDENT, recordIncident } from "../tests/support/recorded-runs.js";

const path = process.argv[2];
if (path === undefined) {
  console.error("usage: npx tsx bench/record-incident.ts <out.natlog>");
  process.exit(2);
}
const tasks = await recordIncident(path, FULL_INCIDENT);
console.log(`${path}: ${tasks} tasks recorded`);
