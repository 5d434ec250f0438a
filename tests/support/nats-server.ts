/**
 * A nats-server of the test's own: a free loopback port, a temp JetStream store, and
 * stop/restart on the same port and store. Needs `nats-server` on PATH (or NATS_SERVER_BIN).
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
    const server = new NatsServer(bin, await freePort(), mkdtempSync(join(tmpdir(), "natsched-js-")), opts);
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

  async restart(): Promise<void> {
    await this.stop();
    await this.startProcess();
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
