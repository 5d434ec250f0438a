/**
 * The small HTTP pieces the machines and what-if handlers share: a JSON answer, a typed
 * error as a 400, and reading a request's JSON body.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { BadOptionError, NatschedError } from "../../machines/errors.js";
import type { LogRecord } from "../../log/types.js";

/** The records of the log a view is computed over, read afresh on each call. */
export type RecordSource = () => AsyncIterable<LogRecord> | Iterable<LogRecord>;

/** What a 400 carries: the error's stable code and its message. */
export interface ErrorBody {
  error: { code: string; message: string };
}

/** Infinity (workerSaturation=inf) and NaN as strings, which JSON cannot hold as numbers. */
function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === "number" && !Number.isFinite(value) ? String(value) : value;
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body, jsonSafe);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), "cache-control": "no-store" });
  res.end(text);
}

/** A typed natsched error becomes a 400 naming it; anything else is the server's fault and is thrown on. */
export function sendBadRequest(res: ServerResponse, error: unknown): void {
  if (!(error instanceof NatschedError)) throw error;
  const body: ErrorBody = { error: { code: error.code, message: error.message } };
  sendJson(res, 400, body);
}

/** Bodies larger than this are refused: a settings form is a few hundred bytes. */
const MAX_BODY = 64 * 1024;

export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new BadOptionError("body", `larger than ${MAX_BODY} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8").trim();
  if (text === "") return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new BadOptionError("body", `not JSON: ${(error as Error).message}`);
  }
}
