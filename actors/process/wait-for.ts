import { ProtocolError, TimeoutError } from "../../machines/errors.js";
import type { Transport } from "../../transport/types.js";

/** True when something answers a request on `subject` within `timeout` ms. */
export async function answers(transport: Transport, subject: string, data: unknown, timeout: number): Promise<boolean> {
  try {
    await transport.request(subject, data, { timeout });
    return true;
  } catch (error) {
    if (error instanceof ProtocolError || error instanceof TimeoutError) return false;
    throw error;
  }
}

/** Polls until something answers on `subject`; `onWait` is told once that it is waiting. */
export async function waitUntilAnswered(
  transport: Transport,
  subject: string,
  data: unknown,
  opts: { everyMs?: number; timeoutMs?: number; onWait?: () => void } = {},
): Promise<void> {
  const every = opts.everyMs ?? 500;
  const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
  let told = false;
  while (!(await answers(transport, subject, data, every))) {
    if (transport.closed) throw new ProtocolError(`gave up waiting for ${subject}: transport closed`);
    if (Date.now() > deadline) throw new TimeoutError(`nothing answered on ${subject}`);
    if (!told) opts.onWait?.();
    told = true;
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}
