/**
 * A nats-server of the test's own: a free loopback port, a temp JetStream store, and
 * stop/restart on the same port and store; or a cluster of them (`NatsServerCluster`:
 * routes, JetStream with a server_name each, monitoring, one server killed and started
 * again). Needs `nats-server` on PATH (or NATS_SERVER_BIN).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const CANDIDATES = [process.env.NATS_SERVER_BIN, "nats-server", "/usr/sbin/nats-server", "/usr/local/bin/nats-server"];

export function natsServerBinary(): string | undefined {
  for (const candidate of CANDIDATES) {
    if (!candidate) continue;
    if (candidate.includes("/") ? existsSync(candidate) : spawnSync(candidate, ["--version"]).status === 0) return candidate;
  }
  return undefined;
}

export interface NatsServerOptions {
  /** Extra command-line arguments. */
  args?: string[];
  /** Server config file text (e.g. "max_payload: 65536"), for settings without a flag. */
  config?: string;
  jetstream?: boolean;
  /** Extra environment variables of the server process (a config may read passwords from them). */
  env?: Record<string, string>;
  /** The client port (default: a free one). */
  port?: number;
}

export class NatsServer {
  private child: ChildProcess | null = null;
  private output = "";

  private constructor(
    readonly bin: string,
    readonly port: number,
    readonly storeDir: string,
    private readonly opts: NatsServerOptions,
  ) {}

  static async start(opts: NatsServerOptions = {}): Promise<NatsServer> {
    const bin = natsServerBinary();
    if (bin === undefined) throw new Error("nats-server not found: install it (apt-get install nats-server) or set NATS_SERVER_BIN");
    const server = new NatsServer(bin, opts.port ?? (await freePort()), mkdtempSync(join(tmpdir(), "natsched-js-")), opts);
    try {
      await server.startProcess();
    } catch (error) {
      await server.dispose();
      throw error;
    }
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** Stop the server (SIGTERM, then SIGKILL after 3 s). */
  async stop(): Promise<void> {
    const child = this.child;
    if (child === null) return;
    this.child = null;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(timer);
  }

  /** Kill the server at once (SIGKILL), as a crashed host would go: no goodbye to its clients or routes. */
  async kill(): Promise<void> {
    const child = this.child;
    if (child === null) return;
    this.child = null;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await exited;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.startProcess();
  }

  /** Start a stopped or killed server again, on its port and store. */
  async start(): Promise<void> {
    if (this.child === null) await this.startProcess();
  }

  /** Stop the server and remove its store. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.storeDir, { recursive: true, force: true });
  }

  /** What the server printed, for failure messages. */
  get log(): string {
    return this.output;
  }

  private async startProcess(): Promise<void> {
    const args = ["-a", "127.0.0.1", "-p", String(this.port), ...(this.opts.jetstream === false ? [] : ["-js", "-sd", this.storeDir])];
    if (this.opts.config !== undefined) {
      const file = join(this.storeDir, "server.conf");
      writeFileSync(file, this.opts.config);
      args.push("-c", file);
    }
    args.push(...(this.opts.args ?? []));
    const child = spawn(this.bin, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...this.opts.env } });
    this.child = child;
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString("utf8")).slice(-20_000);
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    child.once("exit", () => {
      if (this.child === child) this.child = null;
    });
    const deadline = Date.now() + 10_000;
    while (!(await accepts(this.port))) {
      if (this.child !== child) throw new Error(`nats-server exited at start:\n${this.output}`);
      if (Date.now() > deadline) throw new Error(`nats-server did not accept connections on ${this.port}:\n${this.output}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** True once the port takes a TCP connection and sends the server's INFO line. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: "127.0.0.1", port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("data", (chunk) => done(chunk.toString("utf8").startsWith("INFO")));
    socket.once("error", () => done(false));
    socket.setTimeout(1000, () => done(false));
  });
}

export interface NatsServerClusterOptions {
  /** Servers in the cluster. Default 3 (JetStream's R3 needs a quorum of 2 of them). */
  size?: number;
  /** Config text added to every server's. */
  config?: string;
}

/**
 * nats-servers clustered on loopback: each with its client port, route port and monitoring
 * port (all free ports, kept across restarts), a `server_name`, JetStream in a store of its
 * own, and routes to every other. Any of them can be killed and started again. A connection
 * without credentials is in the account with JetStream; `SYSTEM_USER` logs in to the system
 * account (JetStream's meta leader step-down, server events).
 */
export class NatsServerCluster {
  static readonly SYSTEM_USER = { user: "sys", pass: "sys" };

  private constructor(
    readonly servers: NatsServer[],
    /** Each server's monitoring port (`/connz`, `/jsz`, …). */
    private readonly monitorPorts: number[],
  ) {}

  static async start(opts: NatsServerClusterOptions = {}): Promise<NatsServerCluster> {
    const size = opts.size ?? 3;
    const ports = await freePorts(3 * size);
    const clientPorts = ports.slice(0, size);
    const routePorts = ports.slice(size, 2 * size);
    const monitorPorts = ports.slice(2 * size);
    const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`).join(", ");
    const servers: NatsServer[] = [];
    try {
      await Promise.all(
        clientPorts.map(async (port, i) => {
          const config = [
            `server_name: n${i + 1}`,
            `http: 127.0.0.1:${monitorPorts[i]}`,
            `cluster { name: natsched-test, listen: 127.0.0.1:${routePorts[i]}, routes: [${routes}] }`,
            `accounts { SYS: { users: [{ user: sys, password: sys }] }, APP: { jetstream: enabled, users: [{ user: app, password: app }] } }`,
            "system_account: SYS",
            "no_auth_user: app",
            opts.config ?? "",
          ].join("\n");
          servers[i] = await NatsServer.start({ port, config });
        }),
      );
      const cluster = new NatsServerCluster(servers, monitorPorts);
      await cluster.waitForJetStream();
      return cluster;
    } catch (error) {
      await Promise.all(servers.filter(Boolean).map((s) => s.dispose()));
      throw error;
    }
  }

  /** Every server's URL. */
  get urls(): string[] {
    return this.servers.map((s) => s.url);
  }

  /** Every server's URL, comma-separated, as `--nats` takes them. */
  get url(): string {
    return this.urls.join(",");
  }

  /** The server's `server_name`. */
  nameOf(server: NatsServer): string {
    return `n${this.servers.indexOf(server) + 1}`;
  }

  /** A monitoring endpoint's answer (e.g. "/connz") from a running server. */
  async monitor(server: NatsServer, path: string): Promise<Record<string, unknown>> {
    const port = this.monitorPorts[this.servers.indexOf(server)];
    const response = await fetch(`http://127.0.0.1:${port}${path}`);
    return (await response.json()) as Record<string, unknown>;
  }

  /** The server_name of JetStream's meta leader, as a running server sees it ("" if none). */
  async metaLeader(): Promise<string> {
    const server = this.servers.find((s) => s.running);
    if (server === undefined) return "";
    const jsz = await this.monitor(server, "/jsz");
    return (jsz.meta_cluster as { leader?: string } | undefined)?.leader ?? "";
  }

  /** The running server a client connection named `name` is connected to (its `/connz`), if any. */
  async serverOf(connectionName: string): Promise<NatsServer | undefined> {
    for (const server of this.servers) {
      if (!server.running) continue;
      const connz = await this.monitor(server, "/connz?limit=10000").catch(() => undefined);
      const connections = (connz?.connections ?? []) as { name?: string }[];
      if (connections.some((c) => c.name === connectionName)) return server;
    }
    return undefined;
  }

  /**
   * Waits until every running server names the same running server as JetStream's meta
   * leader (after a leader dies, the others keep naming it until they elect another: the
   * JetStream API's stream and consumer creation wait for that).
   */
  async waitForJetStream(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const running = this.servers.filter((s) => s.running);
      const leaders = await Promise.all(
        running.map((s) => this.monitor(s, "/jsz").then((jsz) => (jsz.meta_cluster as { leader?: string } | undefined)?.leader, () => undefined)),
      );
      const names = running.map((s) => this.nameOf(s));
      if (leaders.every((leader) => leader !== undefined && leader === leaders[0] && names.includes(leader))) return;
      if (Date.now() > deadline) throw new Error(`no JetStream meta leader among ${names.join(", ")} after ${timeoutMs} ms (they name ${leaders.join(", ")}):\n${this.log}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** What the servers printed, for failure messages. */
  get log(): string {
    return this.servers.map((s, i) => `--- n${i + 1}\n${s.log}`).join("\n");
  }

  async dispose(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.dispose()));
  }
}

/** `n` distinct free ports (held open together, so none is handed out twice). */
async function freePorts(n: number): Promise<number[]> {
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once("error", reject);
          server.listen(0, "127.0.0.1", () => resolve(server));
        }),
    ),
  );
  const ports = sockets.map((s) => {
    const address = s.address();
    return typeof address === "object" && address !== null ? address.port : 0;
  });
  await Promise.all(sockets.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}
