/**
 * A TCP proxy on a free loopback port in front of another port, for tests that cut one
 * process's connection while the others keep theirs: `cut()` drops every connection and
 * refuses new ones, `restore()` takes connections again on the same port.
 */
import { createServer, connect, type Server, type Socket } from "node:net";

export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly target: number,
    public port: number,
  ) {}

  static async start(target: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(target, 0);
    await proxy.listen();
    return proxy;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** Drop every connection through the proxy and refuse new ones until restore(). */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Take connections again, on the same port. */
  async restore(): Promise<void> {
    if (this.server === null) await this.listen();
  }

  async close(): Promise<void> {
    await this.cut();
  }

  private listen(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect({ host: "127.0.0.1", port: this.target });
      this.sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on("error", drop).on("close", drop);
      upstream.on("error", drop).on("close", drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => {
        const address = server.address();
        if (typeof address === "object" && address !== null) this.port = address.port;
        resolve();
      });
    });
  }
}
