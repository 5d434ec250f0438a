const resolved = Promise.resolve();

/**
 * Runs `fn` in the microtask queue, as queueMicrotask does, more cheaply: Node's
 * queueMicrotask makes an AsyncResource and a bound function for every call, and the actors
 * schedule a few of these per task. An exception `fn` throws surfaces as an unhandled
 * rejection (under Node's default, an uncaught error, as with queueMicrotask).
 */
export function microtask(fn: () => void): void {
  void resolved.then(fn);
}
