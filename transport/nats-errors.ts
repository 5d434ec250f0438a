/** nats.js errors translated into natsched's typed errors, so callers branch on `code` alone. */
import { errors as natsErrors } from "@nats-io/transport-node";
import { ClosedError, ForbiddenError, NatschedError, PayloadTooLargeError, ProtocolError, TimeoutError } from "../machines/errors.js";

export function fromNatsError(error: unknown, what: string, size?: number, limit?: number): unknown {
  if (error instanceof NatschedError) return error;
  if (error instanceof natsErrors.TimeoutError) return new TimeoutError(what);
  // The server refused a publish or a subscription for this user's permissions (docs/nats.md, "Roles and permissions").
  if (error instanceof natsErrors.PermissionViolationError) return new ForbiddenError(`the NATS server refused ${what}: ${error.message}`);
  if (error instanceof natsErrors.RequestError) {
    if (error.isNoResponders()) return new ProtocolError(`no responders for ${what}`);
    if (error.cause instanceof natsErrors.TimeoutError) return new TimeoutError(what);
    if (error.cause instanceof natsErrors.PermissionViolationError) return new ForbiddenError(`the NATS server refused ${what}: ${error.cause.message}`);
  }
  if (error instanceof natsErrors.ClosedConnectionError || error instanceof natsErrors.DrainingConnectionError) {
    return new ClosedError(`NATS connection (${what})`);
  }
  if (error instanceof natsErrors.InvalidArgumentError && /max_payload/.test(error.message)) {
    return new PayloadTooLargeError(size ?? 0, limit ?? 0, what);
  }
  if (error instanceof natsErrors.InvalidSubjectError) return new ProtocolError(`${what}: ${error.message}`);
  return error;
}
