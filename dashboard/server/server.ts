/**
 * The dashboard's HTTP server (node:http): the page, the JSON routes of routes.ts, and
 * `/api/events`, server-sent events that carry a live log's news at most every 250 ms (the
 * cluster now and the task stream's new bars), and a recorded log's while it is read. Binds 127.0.0.1 unless told otherwise; port 0
 * takes a free port. Read-only: nothing it answers changes the cluster or the log.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { BadOptionError } from "../../machines/errors.js";
import type { DashboardModel } from "./model.js";
import { pageFiles, type PageFiles } from "./page-files.js";
import { problem, type Reply } from "./route-types.js";
import { ROUTES } from "./routes.js";
import { EventStream } from "./sse.js";

export interface DashboardOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
}

export interface Dashboard {
  readonly url: string;
  close(): Promise<void>;
}

const UPDATE_MS = 250;
const MAX_BODY = 1 << 20;

export async function startDashboard(model: DashboardModel, opts: DashboardOptions = {}): Promise<Dashboard> {
  const host = opts.host ?? "127.0.0.1";
  const port = opts.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new BadOptionError("dashboard.port", `a port is a whole number 0..65535 (0: a free one), got ${port}`);
  // Bundled (esbuild, in a process of its own) while the server starts listening: the URL need not wait for it.
  const page = pageFiles();
  page.catch(() => {});
  const events = new EventStream();
  const server = createServer((req, res) => {
    void answer(model, page, events, req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, { status: 500, type: "text/plain; charset=utf-8", body: `internal error: ${(error as Error)?.message ?? error}` });
      else res.end();
    });
  });
  let timer: NodeJS.Timeout | undefined;
  const update = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const stream = model.drainStream();
    events.send("update", { summary: model.summary(), stream });
  };
  // At most one update every UPDATE_MS, except the ones a page waits on (the whole stream ready): at once.
  const stopListening = model.onChange((now) => {
    if (now) update();
    else timer ??= setTimeout(update, UPDATE_MS);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}/`,
    close: async () => {
      stopListening();
      if (timer) clearTimeout(timer);
      events.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function answer(model: DashboardModel, page: Promise<PageFiles>, events: EventStream, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://dashboard");
  if (url.pathname === "/api/events") {
    if (req.method !== "GET") return send(res, problem("GET only", 405));
    events.add(res, { event: "hello", data: { live: model.source.live, loading: model.loading } });
    return;
  }
  const route = ROUTES.find((r) => r.path === url.pathname && r.method === req.method);
  if (route === undefined) {
    const other = ROUTES.some((r) => r.path === url.pathname);
    return send(res, other ? problem(`${req.method} is not answered here (read-only)`, 405) : problem(`no such page: ${url.pathname}`, 404));
  }
  send(res, await route.handle({ model, page: await page, url, req, body: () => readBody(req) }));
}

function send(res: ServerResponse, reply: Reply): void {
  res.writeHead(reply.status, { "content-type": reply.type, "cache-control": "no-store" });
  res.end(reply.body);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new BadOptionError("body", `a request body is at most ${MAX_BODY} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}
