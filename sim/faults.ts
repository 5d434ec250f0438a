/**
 * An optional model of network faults for the simulator's mail between actors (scheduler,
 * workers, client): extra delays, reordering and duplication of envelopes. Off unless the
 * scenario has a `faults` field; every choice comes from a PRNG seeded by the scenario's
 * seed, so a faulty run is as repeatable as a clean one.
 *
 * What the real transports allow (docs/simulator.md, "Network faults"):
 * - delay: any transport may be slow. A delayed envelope holds back the envelopes its
 *   sender sends later to the same destination (per-sender order is kept), while other
 *   senders' mail overtakes it.
 * - reorder: the NATS transport re-publishes its recent window after a reconnect, and those
 *   copies can arrive after newer messages of the same sender (docs/nats.md). A reordered
 *   envelope arrives late without holding back later ones, which overtake it.
 * - duplicate: the NATS transport drops copies by their Natsched-Seq tag, but only within
 *   its window; the in-process bus delivers once. It is here to test the cores beyond what
 *   the transports promise (assignment numbers make a copy harmless, docs/protocol.md).
 * Loss is not modelled: a worker's death (kill-worker) is the only way mail disappears.
 */
import { BadOptionError } from "../machines/errors.js";
import { Prng } from "./prng.js";
import { readNumber, readObject } from "./scenario-fields.js";

export interface NetworkFaultSpec {
  /** Probability that an envelope is delayed (keeping its sender's order); default 0. */
  delay?: number;
  /** Probability that an envelope arrives late and is overtaken by later ones; default 0. */
  reorder?: number;
  /** Probability that an envelope is delivered a second time, later; default 0. */
  duplicate?: number;
  /** Longest extra delay, seconds (uniform in [0, maxDelay]); default 0.05. */
  maxDelay?: number;
}

export interface NetworkFaultPlan {
  delay: number;
  reorder: number;
  duplicate: number;
  maxDelay: number;
}

export const DEFAULT_MAX_FAULT_DELAY = 0.05;

/** Mixed into the scenario seed so fault choices never shift the host's other draws. */
const FAULT_STREAM = 0x5eed_fa17;

const FIELDS = ["delay", "reorder", "duplicate", "maxDelay"];

/** Checks a scenario's `faults` field; undefined means no faults. */
export function readFaults(value: unknown, path = "faults"): NetworkFaultPlan | null {
  if (value === undefined) return null;
  const raw = readObject(value, path, FIELDS);
  const probability = (name: string): number => {
    const p = raw[name] === undefined ? 0 : readNumber(raw[name], `${path}.${name}`, { min: 0 });
    if (p > 1) throw new BadOptionError(`${path}.${name}`, `is a probability: between 0 and 1, got ${p}`);
    return p;
  };
  return {
    delay: probability("delay"),
    reorder: probability("reorder"),
    duplicate: probability("duplicate"),
    maxDelay: raw.maxDelay === undefined ? DEFAULT_MAX_FAULT_DELAY : readNumber(raw.maxDelay, `${path}.maxDelay`, { min: 0 }),
  };
}

/** Counts of what the fault model did to a run's mail. */
export interface FaultCounts {
  envelopes: number;
  delayed: number;
  reordered: number;
  duplicated: number;
}

/** Decides when each envelope arrives. One instance per simulation. */
export class NetworkFaults {
  readonly counts: FaultCounts = { envelopes: 0, delayed: 0, reordered: 0, duplicated: 0 };
  private readonly prng: Prng;
  /** Latest in-order arrival per sender and destination: FIFO mail waits for it. */
  private readonly lastArrival = new Map<string, number>();

  constructor(
    private readonly plan: NetworkFaultPlan,
    seed: number,
  ) {
    this.prng = new Prng((seed ^ FAULT_STREAM) >>> 0);
  }

  /** Arrival times of an envelope sent now: one, or two when it is duplicated. */
  arrivals(from: string, to: string, now: number, latency: number): number[] {
    const { plan, prng, counts } = this;
    counts.envelopes += 1;
    const link = `${from}\u0000${to}`;
    let arrival = now + latency;
    if (plan.reorder > 0 && prng.next() < plan.reorder) {
      counts.reordered += 1;
      // Late, and not waited for: later envelopes on this link may overtake it.
      arrival += prng.next() * plan.maxDelay;
    } else {
      if (plan.delay > 0 && prng.next() < plan.delay) {
        counts.delayed += 1;
        arrival += prng.next() * plan.maxDelay;
      }
      // Per-sender order: never before an earlier envelope on the same link (ties keep
      // their send order in the agenda).
      arrival = Math.max(arrival, this.lastArrival.get(link) ?? 0);
      this.lastArrival.set(link, arrival);
    }
    if (plan.duplicate > 0 && prng.next() < plan.duplicate) {
      counts.duplicated += 1;
      return [arrival, arrival + prng.next() * plan.maxDelay];
    }
    return [arrival];
  }
}
