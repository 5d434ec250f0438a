/**
 * Every edge of every machine's compiled table, named as the DST checker names the
 * transitions it sees ("machine: from -EVENT-> to"), for coverage reports.
 */
import { MACHINE_TABLES } from "./checker.js";

export function machineEdges(): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [machine, table] of Object.entries(MACHINE_TABLES)) {
    const edges: string[] = [];
    for (const from of table.states) {
      for (const event of table.events) {
        const to = table.next(from, event);
        if (to !== undefined) edges.push(`${machine}: ${from} -${event}-> ${to}`);
      }
    }
    out[machine] = edges;
  }
  return out;
}
