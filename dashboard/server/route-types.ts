/** What a route's handler gets and gives back. */
import type { IncomingMessage } from "node:http";
import type { DashboardModel } from "./model.js";
import type { PageFiles } from "./page-files.js";

export interface RouteContext {
  model: DashboardModel;
  page: PageFiles;
  url: URL;
  req: IncomingMessage;
  /** The request's body (POST), read whole. */
  body(): Promise<string>;
}

export interface Reply {
  status: number;
  type: string;
  body: string;
}

export type Handler = (ctx: RouteContext) => Reply | Promise<Reply>;

export type RouteTable = ReadonlyArray<{ method: "GET" | "POST"; path: string; handle: Handler }>;

export function json(value: unknown, status = 200): Reply {
  return { status, type: "application/json; charset=utf-8", body: JSON.stringify(value) };
}

/** A bad request's answer: `{ error }` with status 400 (or 404 for what is not there). */
export function problem(message: string, status = 400): Reply {
  return json({ error: message }, status);
}
