import type { Caused } from "../../machines/protocol.js";
import type { ActorRecorder } from "./recorder.js";

/**
 * Names, on an op its core just asked to send, the stimulus that caused it: the seq of the
 * sender's input being handled (the sender is implied by the op: docs/protocol.md, "Causes"),
 * so the receiver's input record carries the link across actors. The op is the core's fresh
 * object for this send; with no log kept there is no record to name and the op goes as it is.
 */
export function stampCause<Op extends object>(op: Op, recorder: ActorRecorder): Op {
  const cause = recorder.stimulus;
  if (cause !== undefined) (op as Caused).cause = cause;
  return op;
}
