/**
 * Polls `check` every 10 ms until it holds. With `ms`, gives up after that long with an error
 * naming `what`; without, the test's own timeout ends a wait that never succeeds.
 */
export async function until(check: () => boolean, ms = Infinity, what = "condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} not reached in ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Polls `check` on an embedded cluster, letting its actors finish what they have in hand
 * (`flush`) before each try; fails after `ms`.
 */
export async function untilFlushed(cluster: { flush(): Promise<void> }, check: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    await cluster.flush();
    if (check()) return;
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
