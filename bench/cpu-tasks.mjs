/**
 * W7's task function, from a module so that workers run it on their executor threads
 * (docs/executors.md): `functions: "bench/cpu-tasks.mjs"` embedded, `natsched worker
 * --functions bench/cpu-tasks.mjs` on NATS. Plain JavaScript so a thread imports it under
 * any runtime.
 */

/** Pure CPU for `ms` (a busy loop on the clock, no sleep, no I/O); returns `i`. */
export function spin(ms, i) {
  const end = performance.now() + ms;
  let x = 0;
  while (performance.now() < end) x += Math.sqrt(x + 1);
  return x >= 0 ? i : -1;
}
