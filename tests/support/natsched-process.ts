/**
 * natsched CLI processes for tests: `node --import tsx cli/main.ts <args>` from the repo
 * root (no build needed), output captured, waited for, stopped by signal.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export class NatschedProcess {
  private output = "";
  private readonly exited: Promise<number | null>;
  private waiters: { pattern: RegExp; resolve: () => void }[] = [];

  constructor(
    readonly label: string,
    readonly child: ChildProcess,
  ) {
    const keep = (chunk: Buffer) => {
      this.output += chunk.toString("utf8");
      this.waiters = this.waiters.filter((w) => {
        if (!w.pattern.test(this.output)) return true;
        w.resolve();
        return false;
      });
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? (signal ? -1 : null))));
  }

  static spawn(label: string, args: string[], env: NodeJS.ProcessEnv = {}): NatschedProcess {
    // NATSCHED_NODE_ARGS: extra node flags for the children, e.g. "--cpu-prof --cpu-prof-dir=prof".
    const nodeArgs = (process.env.NATSCHED_NODE_ARGS ?? "").split(" ").filter((a) => a.length > 0);
    const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", join(REPO_ROOT, "cli", "main.ts"), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new NatschedProcess(label, child);
  }

  get log(): string {
    return this.output;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Resolves when the output matches `pattern`; rejects if the process exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
    if (pattern.test(this.output)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.label}: no ${pattern} after ${timeoutMs} ms; output:\n${this.output}`)), timeoutMs);
      const waiter = {
        pattern,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.waiters.push(waiter);
      void this.exited.then((code) => {
        clearTimeout(timer);
        if (this.waiters.includes(waiter)) reject(new Error(`${this.label} exited (${code}) before ${pattern}; output:\n${this.output}`));
      });
    });
  }

  /** Send `signal` and wait for the exit code (SIGKILL after `graceMs`). */
  async stop(signal: NodeJS.Signals = "SIGTERM", graceMs = 10_000): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.exited;
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }

  whenExited(): Promise<number | null> {
    return this.exited;
  }
}
