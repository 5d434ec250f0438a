/**
 * W7's task function, from a module so that workers run it on their executor threads
 * (docs/executors.md): `functions: "bench/cpu-tasks.mjs"` embedded, `natsched worker
 * --functions bench/cpu-tasks.mjs` on NATS. Plain JavaScript so a thread imports it under
 * any runtime.
 */

function work(iterations) {
  let x = 0;
  for (let k = 0; k < iterations; k++) x += Math.sqrt(x + 1);
  return x;
}

/**
 * Pure CPU: a fixed number of loop iterations (not a loop on the clock, which would end on
 * time even while the thread waits for a core); returns `i`.
 */
export function spin(iterations, i) {
  return work(iterations) >= 0 ? i : -1;
}

/**
 * Iterations of `spin` that take `ms` of CPU on this machine: the best rate of a few probes
 * measured in process CPU time (not wall time, which other processes' load would stretch).
 * Call it while the process does nothing else.
 */
export function iterationsFor(ms) {
  const probe = 2_000_000;
  work(probe);
  let best = 0;
  for (let k = 0; k < 7; k++) {
    const t0 = process.cpuUsage();
    work(probe);
    const used = process.cpuUsage(t0);
    best = Math.max(best, probe / ((used.user + used.system) / 1000));
  }
  return Math.round(best * ms);
}
