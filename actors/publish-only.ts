/**
 * Subjects that take publishes only (a scheduler's announcements, its reports to a client):
 * what they answer a request, since every request on a natsched subject gets an answer
 * (docs/nats.md, "Validation at the boundary"), and how they recognise what they take.
 */
import { PROTOCOL_VERSION } from "../machines/protocol.js";
import type { Msg, Transport } from "../transport/types.js";

/**
 * If `msg` is a request, answer it `{ error }` saying the subject takes `what`, published, and
 * that nothing was done; true if it was one (the caller then does nothing with it). Every
 * subscriber of the subject answers; the requester takes the first answer.
 */
export function refuseRequest(transport: Transport, msg: Msg, what: string): boolean {
  if (msg.reply === undefined) return false;
  if (!transport.closed) transport.publish(msg.reply, { error: `${msg.subject} takes ${what}, published, not requests: nothing was done` });
  return true;
}

/** Whether `data` is the announcement `{ v: 1, op }` (with `fields` of the right type: "string"). */
export function isAnnouncement(data: unknown, op: string, fields: readonly string[] = []): boolean {
  if (typeof data !== "object" || data === null) return false;
  const a = data as Record<string, unknown>;
  return a.v === PROTOCOL_VERSION && a.op === op && fields.every((f) => typeof a[f] === "string");
}
