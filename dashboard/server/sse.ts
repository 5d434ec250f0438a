/**
 * Server-sent events for live updates: each client gets `event: <name>` + JSON data lines;
 * a comment every 15 s keeps proxies from closing an idle stream.
 */
import type { ServerResponse } from "node:http";

export class EventStream {
  private readonly clients = new Set<ServerResponse>();
  private readonly keepAlive: NodeJS.Timeout;

  constructor() {
    this.keepAlive = setInterval(() => {
      for (const res of this.clients) res.write(": keep-alive\n\n");
    }, 15_000);
    this.keepAlive.unref();
  }

  get size(): number {
    return this.clients.size;
  }

  /** Takes over `res` as an event stream; `first` is sent to it alone, before anything else. */
  add(res: ServerResponse, first?: { event: string; data: unknown }): void {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.write("retry: 2000\n\n");
    if (first) res.write(frame(first.event, first.data));
    this.clients.add(res);
    res.on("close", () => this.clients.delete(res));
  }

  send(event: string, data: unknown): void {
    if (this.clients.size === 0) return;
    const text = frame(event, data);
    for (const res of this.clients) res.write(text);
  }

  close(): void {
    clearInterval(this.keepAlive);
    for (const res of this.clients) res.end();
    this.clients.clear();
  }
}

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
