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
