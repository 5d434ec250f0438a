/**
 * Who joins and leaves the scheduler, as its host sees it happen: workers registering,
 * retiring, unregistering or lost, clients joining and leaving, each with its reason. Read
 * off what the core does (a worker's lifecycle transitions, the core's clients before and
 * after an input), so the host reports the core's decisions and decides nothing itself.
 */
import type { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerInput } from "../machines/scheduler/inputs.js";
import { readReason, type Why } from "../machines/reasons.js";

export type MembershipChange =
  | { who: "worker"; name: string; change: "joined"; nthreads: number; host: string }
  /** retiring: leaving gracefully (its work handed over first); left: unregistered itself; lost: removed without its word. */
  | { who: "worker"; name: string; change: "retiring" | "left" | "lost"; reason: string }
  | { who: "client"; client: string; change: "joined" }
  | { who: "client"; client: string; change: "left"; reason: string | undefined };

export class MembershipWatch {
  private input: SchedulerInput | undefined;
  private clientKnown = false;

  constructor(
    private readonly core: () => SchedulerCore,
    private readonly listener: (change: MembershipChange) => void,
  ) {}

  /** Before the core takes `input`. */
  before(input: SchedulerInput): void {
    this.input = input;
    const client = clientOf(input);
    if (client !== undefined) this.clientKnown = this.core().clients.has(client);
  }

  /** After the core took it. */
  after(input: SchedulerInput): void {
    this.input = undefined;
    const client = clientOf(input);
    if (client === undefined) return;
    const known = this.core().clients.has(client);
    if (known && !this.clientKnown) this.listener({ who: "client", client, change: "joined" });
    else if (!known && this.clientKnown) this.listener({ who: "client", client, change: "left", reason: (input as { reason?: string }).reason });
  }

  /** A transition of a worker's lifecycle machine, during the current input. */
  workerTransition(name: string, event: string, why: Why | undefined): void {
    const logged = readReason({ machine: "worker", event, why });
    const reason = logged.kind === "retire" || logged.kind === "worker-closed" ? logged.why.reason : "";
    if (event === "START") {
      const ws = this.core().workers.get(name);
      this.listener({ who: "worker", name, change: "joined", nthreads: ws?.nthreads ?? 0, host: ws?.host ?? "" });
    } else if (event === "CLOSE") {
      this.listener({ who: "worker", name, change: "retiring", reason });
    } else if (event === "CLOSED") {
      // Only a worker's own unregister-worker is leaving; anything else removed it (worker-lost, or a new incarnation registering).
      this.listener({ who: "worker", name, change: this.input?.op === "unregister-worker" ? "left" : "lost", reason });
    }
  }
}

function clientOf(input: SchedulerInput): string | undefined {
  const client = (input as { client?: unknown }).client;
  return typeof client === "string" ? client : undefined;
}

/** One line for the scheduler's output, e.g. "worker w1 lost: connection gone: …". */
export function formatMembership(change: MembershipChange): string {
  if (change.who === "client") {
    return change.change === "joined" ? `client ${change.client} joined` : `client ${change.client} left${change.reason ? `: ${change.reason}` : ""}`;
  }
  switch (change.change) {
    case "joined":
      return `worker ${change.name} joined: ${change.nthreads} thread(s)${change.host ? ` on host ${change.host}` : ""}`;
    case "retiring":
      return `worker ${change.name} retiring${change.reason ? `: ${change.reason}` : ""}`;
    case "left":
      return `worker ${change.name} left (unregistered)${change.reason ? `: ${change.reason}` : ""}`;
    case "lost":
      return `worker ${change.name} lost${change.reason ? `: ${change.reason}` : ""}`;
  }
}
