import type { InputRecord } from "./types.js";

/**
 * The stimulus id (`actor:seq`, docs/log-format.md "Causes") an input record's `event.cause`
 * names, or undefined when it names none. A message carries only the sender's seq: the
 * sender is implied by the op. To a worker or a client, the scheduler; to the scheduler, the
 * worker its op names (`worker`, or `name` in register-worker and its kin) or the client
 * (`client`).
 */
export function causeId(record: InputRecord): string | undefined {
  const event = record.event;
  const seq = event.cause;
  if (!Number.isSafeInteger(seq) || (seq as number) < 0) return undefined;
  const sender = senderOf(record.actor, event);
  return sender === undefined ? undefined : `${sender}:${seq as number}`;
}

function senderOf(receiver: string, event: InputRecord["event"]): string | undefined {
  if (receiver !== "scheduler") return "scheduler";
  if (typeof event.worker === "string") return `worker.${event.worker}`;
  if (typeof event.client === "string") return `client.${event.client}`;
  if (typeof event.name === "string") return `worker.${event.name}`;
  return undefined;
}
