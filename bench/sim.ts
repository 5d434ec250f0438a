/**
 * Real time the simulator takes for two large scenarios:
 *   npx tsx bench/sim.ts [independent-count] [tree-leaves]
 * 100,000 independent one-second tasks on 4 workers x 2 threads, and a binary reduction
 * tree (leaves + inner nodes, about 2 x leaves tasks).
 */
import { simulate, type Scenario, type SimTaskSpec } from "../sim.js";

const WORKERS = Array.from({ length: 4 }, (_, i) => ({ name: `w${i}`, nthreads: 2 }));

function independent(n: number): Scenario {
  return { workers: WORKERS, tasks: Array.from({ length: n }, (_, i) => ({ key: `task-${i}`, duration: 1 })) };
}

function tree(leaves: number): Scenario {
  const tasks: SimTaskSpec[] = [];
  let level = Array.from({ length: leaves }, (_, i) => `leaf-${i}`);
  for (const key of level) tasks.push({ key, duration: 1 });
  for (let depth = 1; level.length > 1; depth++) {
    const next: string[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const key = `sum${depth}-${i / 2}`;
      tasks.push({ key, deps: level.slice(i, i + 2), duration: 1 });
      next.push(key);
    }
    level = next;
  }
  return { workers: WORKERS, tasks };
}

function measure(name: string, scenario: Scenario): void {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = simulate(scenario);
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const states = new Map<string, number>();
  for (const t of Object.values(result.tasks)) states.set(t.state, (states.get(t.state) ?? 0) + 1);
  console.log(
    JSON.stringify({
      scenario: name,
      tasks: scenario.tasks.length,
      realSeconds: Number(seconds.toFixed(2)),
      cpuSeconds: Number(((used.user + used.system) / 1e6).toFixed(2)),
      makespan: Number(result.makespan.toFixed(3)),
      logRecords: result.log.length,
      transfers: result.transfers.length,
      states: Object.fromEntries(states),
    }),
  );
}

const n = Number(process.argv[2] ?? 100_000);
const leaves = Number(process.argv[3] ?? 5_000);
measure(`${n} independent 1s tasks, 4x2 workers`, independent(n));
measure(`binary tree over ${leaves} leaves, 4x2 workers`, tree(leaves));
