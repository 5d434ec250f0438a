/** Replies the machines and what-if handlers share: JSON that keeps Infinity and NaN, and a typed error as a 400. */
import { NatschedError } from "../../machines/errors.js";
import type { Reply } from "./route-types.js";

/** A 400's body: the message, as every dashboard route gives it, and the error's stable code. */
export interface ErrorBody {
  error: string;
  code: string;
}

/** Infinity (workerSaturation=inf) and NaN (no recorded makespan) as strings, which JSON cannot hold as numbers. */
function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === "number" && !Number.isFinite(value) ? String(value) : value;
}

export function safeJson(value: unknown, status = 200): Reply {
  return { status, type: "application/json; charset=utf-8", body: JSON.stringify(value, jsonSafe) };
}

/** A typed natsched error as a 400 naming it; anything else is the server's fault and is thrown on. */
export function typedProblem(error: unknown): Reply {
  if (!(error instanceof NatschedError)) throw error;
  const body: ErrorBody = { error: error.message, code: error.code };
  return safeJson(body, 400);
}
