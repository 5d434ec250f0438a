import {
  BadOptionError,
  CycleError,
  ForbiddenError,
  GraphError,
  KeyExistsError,
  NatschedError,
  TaskFailedError,
  UnknownDependencyError,
  UnknownFunctionError,
  type ErrorCode,
} from "../machines/errors.js";
import type { ErrorInfo } from "../machines/protocol.js";

/** Rebuild the typed error a scheduler reply described. */
export function errorFromInfo(info: ErrorInfo & { keys?: string[] }): NatschedError {
  const keys = info.keys ?? [];
  switch (info.code as ErrorCode | undefined) {
    case "CYCLE":
      return withMessage(new CycleError(keys), info.message);
    case "UNKNOWN_DEPENDENCY":
      return withMessage(new UnknownDependencyError(keys[0] ?? "?", keys[1] ?? "?"), info.message);
    case "UNKNOWN_FUNCTION":
      return withMessage(new UnknownFunctionError(extractQuoted(info.message) ?? "?"), info.message);
    case "GRAPH":
      return withMessage(new GraphError(info.message, "GRAPH", keys), info.message);
    case "BAD_OPTION":
      return withMessage(new BadOptionError("?", info.message), info.message);
    case "KEY_EXISTS":
      return withMessage(new KeyExistsError(keys), info.message);
    case "FORBIDDEN":
      return new ForbiddenError(info.message);
    default:
      return new NatschedError((info.code as ErrorCode | undefined) ?? "PROTOCOL", info.message);
  }
}

export function taskError(key: string, failedKey: string, error: ErrorInfo): TaskFailedError {
  const failed = new TaskFailedError(key, error.message, error.name, failedKey);
  if (typeof error.stack === "string") failed.remoteStack = error.stack;
  return failed;
}

function withMessage<E extends Error>(error: E, message: string): E {
  error.message = message;
  return error;
}

function extractQuoted(message: string): string | undefined {
  return /"([^"]+)"/.exec(message)?.[1];
}
