/**
 * Runs `close` once on the first SIGINT or SIGTERM and resolves when it is done. A second
 * signal, or a close that hangs past `forceAfterMs`, exits at once.
 */
export function untilShutdown(close: (signal: string) => Promise<void>, opts: { forceAfterMs?: number; onError?: (error: unknown) => void } = {}): Promise<string> {
  return new Promise((resolve) => {
    let closing = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (closing) process.exit(130);
      closing = true;
      const force = setTimeout(() => process.exit(1), opts.forceAfterMs ?? 10_000);
      force.unref();
      close(signal).then(
        () => {
          cleanup();
          resolve(signal);
        },
        (error: unknown) => {
          opts.onError?.(error);
          cleanup();
          resolve(signal);
        },
      );
    };
    const cleanup = () => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}
