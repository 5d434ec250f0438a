/**
 * Who is still there, as the scheduler's host sees it: the bookkeeping behind worker-lost
 * and the release of silent clients. No I/O and no clock of its own: the host passes the
 * time, runs the probes it is asked for, and feeds the core the decisions as recorded
 * inputs (so a replay needs none of this). Both scheduler hosts, the live actor and the
 * simulator's, run it through the host kit's LivenessWatch (actors/host/).
 */

export interface LivenessPolicy {
  /** Seconds between heartbeats (workers and clients send one each). */
  heartbeatInterval: number;
  /** Seconds of silence after which a worker is lost; Infinity never (Dask's worker-ttl). */
  workerTtl: number;
  /** Seconds of silence after which a client's wanted keys are released. */
  clientReleaseGrace: number;
}

export interface WorkerLoss {
  name: string;
  id: string;
  reason: string;
}

export interface ClientRelease {
  client: string;
  reason: string;
}

export interface LivenessDecisions {
  lost: WorkerLoss[];
  /** Silent workers to ask whether their connection is still there (see probeResult). */
  probe: { name: string; id: string }[];
  release: ClientRelease[];
}

/** How a probe of a silent worker's data subject came back. */
export type ProbeOutcome = "answered" | "no-responders" | "inconclusive";

/** Heartbeats a worker may miss before the host probes its connection. */
export const PROBE_AFTER_HEARTBEATS = 3;
/** Heartbeats a client may miss before it counts as gone, whatever the grace. */
export const CLIENT_MIN_HEARTBEATS = 3;
/**
 * How long a probed worker must have had no subscriber on its subject before it is lost:
 * long enough for a worker whose connection merely dropped to reconnect (nats.js waits
 * reconnectTimeWait, 1 s by default, between attempts).
 */
export function unreachableWindow(heartbeatInterval: number): number {
  return Math.max(2, 4 * heartbeatInterval);
}

/** Released clients remembered, to tell one that comes back what it lost. */
const RELEASED_MEMORY = 1000;

interface WorkerSeen {
  id: string;
  at: number;
  /** When probes started finding nobody subscribed; null while reachable or unknown. */
  unreachableSince: number | null;
}

export class Liveness {
  private readonly workers = new Map<string, WorkerSeen>();
  private readonly clients = new Map<string, number>();
  private readonly released = new Map<string, { keys: string[]; reason: string }>();

  constructor(private readonly policy: LivenessPolicy) {}

  /** Heard at `t`; hearing of an earlier time (a heartbeat the simulator accounts for late) moves nothing back. */
  heardFromWorker(name: string, id: string, t: number): void {
    // Updated in place: every op a worker sends comes through here (a task-finished per task).
    const seen = this.workers.get(name);
    if (seen === undefined) this.workers.set(name, { id, at: t, unreachableSince: null });
    else {
      seen.at = seen.id === id ? Math.max(seen.at, t) : t;
      seen.id = id;
      seen.unreachableSince = null;
    }
  }

  /** The incarnation of `name` watched now, if any. */
  watchedId(name: string): string | undefined {
    return this.workers.get(name)?.id;
  }

  /** The worker incarnations watched now. */
  *watchedWorkers(): IterableIterator<{ name: string; id: string }> {
    for (const [name, w] of this.workers) yield { name, id: w.id };
  }

  /** A worker left or was lost; `id` set: only if it is still that incarnation. */
  workerGone(name: string, id?: string): void {
    if (id === undefined || this.workers.get(name)?.id === id) this.workers.delete(name);
  }

  /**
   * A client spoke. If the host had released it, returns what it was told at the time, so
   * the host can tell the client its futures are gone (once).
   */
  heardFromClient(client: string, t: number): { keys: string[]; reason: string } | undefined {
    this.clients.set(client, t);
    const released = this.released.get(client);
    if (released !== undefined) this.released.delete(client);
    return released;
  }

  clientGone(client: string): void {
    this.clients.delete(client);
  }

  /** A client the core knows of that this host never heard (a scheduler restarted from its log): the grace starts now. */
  adoptClient(client: string, t: number): void {
    if (!this.clients.has(client)) this.clients.set(client, t);
  }

  /** Remember what a released client wanted, for when it comes back. */
  noteReleased(client: string, keys: string[], reason: string): void {
    this.released.set(client, { keys, reason });
    if (this.released.size > RELEASED_MEMORY) this.released.delete(this.released.keys().next().value!);
  }

  /**
   * The host could not have heard anyone until `t` (its own connection was down, or its
   * event loop stalled): silence before then proves nothing, so every clock restarts.
   */
  credit(t: number): void {
    for (const w of this.workers.values()) {
      w.at = Math.max(w.at, t);
      w.unreachableSince = null;
    }
    for (const [client, at] of this.clients) this.clients.set(client, Math.max(at, t));
  }

  probeResult(name: string, id: string, outcome: ProbeOutcome, t: number): void {
    const w = this.workers.get(name);
    if (w === undefined || w.id !== id) return;
    if (outcome === "no-responders") w.unreachableSince ??= t;
    else w.unreachableSince = null;
  }

  /** What is due at time `t`. Lost workers and released clients are forgotten here. */
  due(t: number): LivenessDecisions {
    const { heartbeatInterval, workerTtl, clientReleaseGrace } = this.policy;
    const out: LivenessDecisions = { lost: [], probe: [], release: [] };
    const window = unreachableWindow(heartbeatInterval);
    for (const [name, w] of this.workers) {
      const silent = t - w.at;
      if (silent > workerTtl) {
        out.lost.push({ name, id: w.id, reason: `${noMessageFor(silent)} (workerTtl ${workerTtl}s)` });
      } else if (w.unreachableSince !== null && t - w.unreachableSince >= window) {
        const gone = (t - w.unreachableSince).toFixed(1);
        out.lost.push({ name, id: w.id, reason: `connection gone: ${noMessageFor(silent)} and nobody serving its subject for ${gone}s` });
      } else if (silent >= PROBE_AFTER_HEARTBEATS * heartbeatInterval) {
        out.probe.push({ name, id: w.id });
      }
    }
    for (const loss of out.lost) this.workers.delete(loss.name);
    const releaseAfter = Math.max(clientReleaseGrace, CLIENT_MIN_HEARTBEATS * heartbeatInterval);
    for (const [client, at] of this.clients) {
      const silent = t - at;
      if (silent < releaseAfter) continue;
      out.release.push({ client, reason: `no message for ${silent.toFixed(1)}s (clientReleaseGrace ${clientReleaseGrace}s)` });
      this.clients.delete(client);
    }
    return out;
  }
}

function noMessageFor(silent: number): string {
  return `no message for ${silent.toFixed(1)}s`;
}

/**
 * How long a worker had been silent when the liveness check lost it, read back from the
 * recorded worker-lost's reason (written by `due` above); undefined for a loss it did not
 * decide (a worker killed by its host, one lost by hand). The worker died about that long
 * before it was lost: what-if places the death there (tools/workload-extract.ts).
 */
export function silenceBeforeLoss(reason: string): number | undefined {
  const match = /^(?:connection gone: )?no message for (\d+(?:\.\d+)?)s /.exec(reason);
  return match === null ? undefined : Number(match[1]);
}
