import { appendOp } from "../actors/host/op-batch.js";
import { EventQueue } from "./event-queue.js";
import type { NetworkFaults } from "./faults.js";

/** Takes the ops one sender batched for this address in one turn. */
export type Mailbox = (from: string, ops: unknown[]) => void;

/** Sees every envelope as it is sent, with when each copy will arrive (verification). */
export type MailTap = (from: string, to: string, ops: readonly unknown[], sentAt: number, arrivals: readonly number[]) => void;

/**
 * The discrete-event core of the simulator: a virtual clock, an agenda of events, and
 * mail between actors. An event runs to completion (a "turn"); what actors sent during
 * the turn is then batched per sender and destination, like the real actors' Outbox,
 * and delivered `latency` seconds later (or when the optional fault model says). Mail
 * goes to the mailbox open at the address when it is sent, as a subscription receives
 * it: if that mailbox closed meanwhile (the worker died, or another incarnation took its
 * name), the mail is lost. Nothing sleeps: the clock jumps from event to event.
 */
export class SimKernel {
  now = 0;
  /** Called after every event, once its mail is sent (verification observers). */
  onTurn: (() => void) | null = null;
  onMail: MailTap | null = null;
  private readonly agenda = new EventQueue<() => void>();
  private readonly mailboxes = new Map<string, Mailbox>();
  /**
   * Per sender, its lanes (one per destination) and the ones holding ops this turn, in the
   * order of their first op; and the senders with ops this turn, in the same order. Kept
   * from turn to turn: a fresh Map per sender and per turn was a measurable share of a large
   * run's garbage. Envelopes go out grouped by sender, as nested Maps would give them.
   */
  private readonly senders = new Map<string, Sender>();
  private readonly sending: Sender[] = [];

  /** Per sender, the time before which what it sends does not leave (its host is busy: holdUntil). */
  private readonly holds = new Map<string, number>();

  constructor(
    readonly latency: number,
    private readonly faults: NetworkFaults | null = null,
    /** Seconds mail to an address waits in its receiver's host, on top of `latency` (sim/host-costs.ts); none by default. */
    private readonly hostDelay: ((to: string) => number) | null = null,
  ) {}

  /** What `from` sends before `time` leaves at `time` (its host is busy until then), in the order sent. */
  holdUntil(from: string, time: number): void {
    if (time > (this.holds.get(from) ?? -Infinity)) this.holds.set(from, time);
  }

  /** When `from`'s host is free to send or take mail again (now when it is not busy). */
  freeAt(from: string): number {
    return Math.max(this.now, this.holds.get(from) ?? -Infinity);
  }

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

  /** Whether a mailbox is open at `address` (someone subscribed to its subject). */
  isOpen(address: string): boolean {
    return this.mailboxes.has(address);
  }

  send(from: string, to: string, op: unknown): void {
    let sender = this.senders.get(from);
    if (sender === undefined) this.senders.set(from, (sender = { from, lanes: new Map(), pending: [] }));
    let lane = sender.lanes.get(to);
    if (lane === undefined) sender.lanes.set(to, (lane = { to, ops: null }));
    if (lane.ops === null) {
      lane.ops = [];
      if (sender.pending.length === 0) this.sending.push(sender);
      sender.pending.push(lane);
    }
    appendOp(lane.ops, op);
  }

  /** Runs events until none is left. */
  run(): void {
    this.flush();
    this.onTurn?.();
    for (let event = this.agenda.pop(); event !== undefined; event = this.agenda.pop()) {
      this.now = event.time;
      event.item();
      this.flush();
      this.onTurn?.();
    }
  }

  private flush(): void {
    const sending = this.sending;
    if (sending.length === 0) return;
    for (let i = 0; i < sending.length; i++) {
      const { from, pending } = sending[i]!;
      for (let j = 0; j < pending.length; j++) {
        const lane = pending[j]!;
        const ops = lane.ops!;
        lane.ops = null;
        this.post(from, lane.to, ops);
      }
      pending.length = 0;
    }
    sending.length = 0;
  }

  /** One envelope: to the mailbox open at `to` now, on arrival (each copy the faults make). */
  private post(from: string, to: string, ops: unknown[]): void {
    const mailbox = this.mailboxes.get(to);
    const departure = this.holds.size === 0 ? this.now : this.freeAt(from);
    const delay = this.hostDelay === null ? this.latency : this.latency + this.hostDelay(to);
    const arrivals = this.faults === null ? [departure + delay] : this.faults.arrivals(from, to, departure, delay);
    this.onMail?.(from, to, ops, this.now, arrivals);
    if (mailbox === undefined) return;
    for (const arrival of arrivals) {
      this.agenda.push(arrival, () => {
        if (this.mailboxes.get(to) === mailbox) mailbox(from, ops);
      });
    }
  }
}

interface Lane {
  readonly to: string;
  /** The ops batched for `to` this turn; null when none. */
  ops: unknown[] | null;
}

interface Sender {
  readonly from: string;
  readonly lanes: Map<string, Lane>;
  /** Lanes with ops this turn, in the order of their first op. */
  readonly pending: Lane[];
}
