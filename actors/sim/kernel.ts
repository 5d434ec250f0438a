import { EventQueue } from "./event-queue.js";

/** Takes the ops one sender batched for this address in one turn. */
export type Mailbox = (from: string, ops: unknown[]) => void;

/**
 * The discrete-event core of the simulator: a virtual clock, an agenda of events, and
 * mail between actors. An event runs to completion (a "turn"); what actors sent during
 * the turn is then batched per sender and destination, like the real actors' Outbox,
 * and delivered `latency` seconds later. Nothing sleeps: the clock jumps from event to
 * event.
 */
export class SimKernel {
  now = 0;
  private readonly agenda = new EventQueue<() => void>();
  private readonly mailboxes = new Map<string, Mailbox>();
  private readonly outgoing = new Map<string, Map<string, unknown[]>>();

  constructor(readonly latency: number) {}

  /** Run `event` at virtual time `time` (never earlier than now). */
  at(time: number, event: () => void): void {
    this.agenda.push(Math.max(time, this.now), event);
  }

  /** Mail for `address` goes to `mailbox` from now on; mail to a closed address is lost. */
  open(address: string, mailbox: Mailbox): void {
    this.mailboxes.set(address, mailbox);
  }

  close(address: string): void {
    this.mailboxes.delete(address);
  }

  send(from: string, to: string, op: unknown): void {
    let byDestination = this.outgoing.get(from);
    if (byDestination === undefined) this.outgoing.set(from, (byDestination = new Map()));
    let ops = byDestination.get(to);
    if (ops === undefined) byDestination.set(to, (ops = []));
    ops.push(op);
  }

  /** Runs events until none is left. */
  run(): void {
    this.flush();
    for (let event = this.agenda.pop(); event !== undefined; event = this.agenda.pop()) {
      this.now = event.time;
      event.item();
      this.flush();
    }
  }

  private flush(): void {
    if (this.outgoing.size === 0) return;
    const arrival = this.now + this.latency;
    for (const [from, byDestination] of this.outgoing) {
      for (const [to, ops] of byDestination) {
        this.agenda.push(arrival, () => this.mailboxes.get(to)?.(from, ops));
      }
    }
    this.outgoing.clear();
  }
}
