import type { SimKernel } from "./kernel.js";
import type { SimFuture } from "./scenario.js";
import { clientAddress } from "./sim-scheduler.js";

/**
 * The clients of a simulation, as natsched's Client keeps its futures: each client holds a
 * future per key it asked for, settled by the first report the scheduler sends it about the
 * key (key-in-memory, key-erred, key-cancelled) or cancelled by the client itself (kept,
 * settled `cancelled`, until it submits the key again), dropped when it releases the key or
 * leaves. Reports arrive through the kernel's mail, so network faults delay them as any
 * other message. What is left at the end is the run's `futures`.
 */
export class SimClients {
  private readonly futures = new Map<string, Map<string, SimFuture>>();

  constructor(private readonly kernel: SimKernel) {}

  /** The client asks for `keys` (it submits a graph wanting them): a future for each it does not hold. */
  want(client: string, keys: readonly string[]): void {
    const held = this.open(client);
    const now = this.kernel.now;
    for (const key of keys) {
      const future = held.get(key);
      if (future === undefined || future.state === "cancelled") held.set(key, { state: "pending", wantedAt: now, settledAt: -1 });
    }
  }

  /**
   * The client cancels `keys` (Client.cancel): its futures of them, and of every task
   * depending on one of them (`dependents`: a key's direct dependents among the scenario's
   * tasks), settle `cancelled` now. Returns the keys it holds futures for among them, the
   * cancel-keys to send.
   */
  cancel(client: string, keys: readonly string[], dependents: (key: string) => readonly string[]): string[] {
    const held = this.futures.get(client);
    if (held === undefined) return [];
    const seen = new Set<string>();
    const stack = [...keys];
    const out: string[] = [];
    while (stack.length > 0) {
      const key = stack.pop()!;
      if (seen.has(key)) continue;
      seen.add(key);
      const future = held.get(key);
      if (future !== undefined) {
        out.push(key);
        if (future.state !== "cancelled") {
          future.state = "cancelled";
          future.settledAt = this.kernel.now;
          delete future.error;
        }
      }
      stack.push(...dependents(key));
    }
    return out;
  }

  release(client: string, keys: readonly string[]): void {
    const held = this.futures.get(client);
    if (held !== undefined) for (const key of keys) held.delete(key);
  }

  /** The client leaves: its futures go, and reports still on their way to it are lost. */
  leave(client: string): void {
    this.futures.delete(client);
    this.kernel.close(clientAddress(client));
  }

  /** Clients holding futures (those that left hold none). */
  names(): string[] {
    return [...this.futures.keys()];
  }

  /**
   * A scheduler started a new run, and told the client which of its keys it holds for it
   * (`wanted`): the client's side of Client.reconcile. Every other key it holds a future for
   * is to be submitted again (returned; a finished future waits again, for the new run's
   * report), unless it erred or was cancelled (it keeps its outcome) or it cannot be computed
   * again (`computable` false: it needs scattered data), when it fails now with
   * SchedulerRestartedError.
   */
  reconcile(client: string, wanted: ReadonlySet<string>, computable: (key: string) => boolean): string[] {
    const held = this.futures.get(client);
    if (held === undefined) return [];
    const again: string[] = [];
    for (const [key, future] of held) {
      if (wanted.has(key) || future.state === "erred" || future.state === "cancelled") continue;
      if (computable(key)) {
        future.state = "pending";
        future.settledAt = -1;
        delete future.error;
        again.push(key);
      } else {
        future.state = "erred";
        future.error = "SchedulerRestartedError";
        future.settledAt = this.kernel.now;
      }
    }
    return again;
  }

  /** Futures still held, by client and key (clients holding none left out). */
  held(): Record<string, Record<string, SimFuture>> {
    const out: Record<string, Record<string, SimFuture>> = {};
    for (const [client, held] of this.futures) {
      if (held.size === 0) continue;
      out[client] = Object.fromEntries([...held].map(([key, future]) => [key, { ...future }]));
    }
    return out;
  }

  /** The client's futures, its mailbox opened the first time it acts (or after it left). */
  private open(client: string): Map<string, SimFuture> {
    let held = this.futures.get(client);
    if (held !== undefined) return held;
    this.futures.set(client, (held = new Map()));
    const futures = held;
    this.kernel.open(clientAddress(client), (_from, ops) => {
      for (const op of ops as Report[]) this.report(futures, op);
    });
    return held;
  }

  private report(held: Map<string, SimFuture>, op: Report): void {
    const future = held.get(op.key);
    if (future === undefined || future.state !== "pending") return;
    future.settledAt = this.kernel.now;
    if (op.op === "key-in-memory") future.state = "memory";
    else if (op.op === "key-erred") {
      future.state = "erred";
      future.error = op.error?.name ?? "Error";
    } else if (op.op === "key-cancelled") future.state = "cancelled";
  }
}

type Report = { op: "key-in-memory" | "key-erred" | "key-cancelled"; key: string; error?: { name?: string } };
