/**
 * A story step's cause in words: the stimulus (the input the actor took last before the
 * step, docs/log-format.md "Causes") said as what happened, and, when that input was a message
 * from another actor, what made that actor send it. tools/story-causes.ts finds the inputs.
 */
import type { InputRecord, TransitionRecord } from "../log/types.js";

/** What the story has seen of the key so far, in its order: for "computed again". */
export interface KeyHistory {
  /** A result of the key was made (a scheduler or worker transition into memory). */
  computed: boolean;
  /** Why its last result went away (a lost or departed worker), for the recomputation that follows. */
  lost?: string;
}

type Event = InputRecord["event"];

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The stimulus alone, as a clause: "worker c was lost (killed)", "client X left", ... */
export function stimulusWords(event: Event, key: string): string {
  const e = event as Record<string, unknown>;
  const worker = str(e.worker) ?? str(e.name);
  const client = str(e.client);
  const reason = str(e.reason);
  const because = reason !== undefined ? ` (${reason})` : "";
  // Another task's outcome: a dependency's, or one whose end freed a thread or a queue slot; the words do not guess which.
  const other = str(e.key) !== undefined && e.key !== key ? `task ${String(e.key)}` : "it";
  switch (event.op) {
    case "worker-lost":
      return `worker ${worker} was lost${because}`;
    case "unregister-worker":
      return `worker ${worker} left${because}`;
    case "retire-worker":
      return `worker ${worker} retired${because}`;
    case "register-worker":
      return `worker ${worker} joined`;
    case "client-leave":
      return `client ${client} left${because}`;
    case "release-keys":
      return `client ${client} released ${keysText(e.keys, key)}`;
    case "cancel-keys":
      return `client ${client} cancelled ${keysText(e.keys, key)}`;
    case "update-graph":
      return `client ${client} submitted ${Array.isArray(e.tasks) && e.tasks.some((t) => (t as { key?: unknown }).key === key) ? "it" : "work that needs it"}`;
    case "update-data":
      return `client ${client} scattered data`;
    case "task-finished":
      return `${other} finished on worker ${worker}`;
    case "task-erred": {
      const error = e.error as { name?: string; message?: string } | undefined;
      return `${other} failed on worker ${worker}: ${error?.name ?? "Error"}: ${error?.message ?? ""}`;
    }
    case "steal-response":
      return `worker ${worker} ${e.outcome === "confirm" ? "gave" : "kept"} ${other}${e.outcome === "confirm" ? " up" : ""} (${String(e.state)} there)`;
    case "missing-data":
      return `worker ${worker} found ${other} missing on ${String(e.holder)}`;
    case "add-keys":
      return `worker ${worker} reported holding it`;
    case "balance":
      return "a work-stealing pass";
    case "scheduler-start":
      return "the scheduler started";
    case "scheduler-close":
      return "the scheduler closed";
    case "compute-task":
      return `the scheduler assigned ${other}`;
    case "free-keys":
      return "the scheduler freed it";
    case "steal-request":
      return "the scheduler asked for it back (a steal)";
    case "execute-done":
      return `${other} ran`;
    case "execute-failed": {
      const error = e.error as { name?: string; message?: string } | undefined;
      return `${other} failed: ${error?.name ?? "Error"}: ${error?.message ?? ""}`;
    }
    case "gather-done":
      return `inputs arrived from ${String(e.from)}`;
    case "gather-failed":
      return `fetching from ${String(e.from)} failed${because}`;
    case "close":
      return "the worker closed";
    default:
      return `input ${event.op}`;
  }
}

function keysText(keys: unknown, key: string): string {
  if (!Array.isArray(keys)) return "keys";
  return keys.includes(key) ? "it" : `${keys.length === 1 ? String(keys[0]) : `${keys.length} keys`} it was needed for`;
}

/**
 * A transition's cause: a headline saying what happened to the key, then the stimulus and,
 * for a message from the scheduler, the scheduler's own stimulus ("released: the scheduler
 * freed it: client X left"). `history` carries what earlier steps saw (a loss) to later ones.
 */
export function transitionCause(r: TransitionRecord, stimulus: Event, upstream: Event | undefined, history: KeyHistory): string {
  const key = r.id;
  const why = (r.why ?? {}) as Record<string, unknown>;
  const words = upstream === undefined ? stimulusWords(stimulus, key) : `${stimulusWords(stimulus, key)}: ${stimulusWords(upstream, key)}`;
  const origin = upstream ?? stimulus;
  const gone = workerGone(origin);
  const into = r.to.split(".")[0]!;
  const from = r.from.split(".")[0]!;
  let text: string;
  if (r.event === "STEAL" && r.machine === "wtask") text = `given up to a steal: ${words}`;
  else if (r.event === "STEAL") text = `steal requested from ${String(why.victim)} to ${String(why.thief)}: ${words}`;
  else if (r.event === "STEAL_CONFIRM" || (stimulus.op === "compute-task" && origin.op === "steal-response" && origin.outcome === "confirm")) {
    text = `stolen from ${str(why.victim) ?? str(origin.worker)} to ${str(why.thief) ?? actorWorker(r.actor)}: ${words}`;
  } else if (into === "erred" || into === "error") text = `erred: ${words}`;
  else if (from === "memory" && gone !== undefined && r.machine === "task") {
    history.lost = `its result was lost with ${gone}`;
    text = `result lost: ${gone}`;
  } else if (from === "processing" && gone !== undefined && r.machine === "task") {
    history.lost = `its worker was lost while it ran: ${gone}`;
    text = `interrupted: ${gone}`;
  } else if (startsWork(r) && history.lost !== undefined) text = `${history.computed ? "recomputed" : "computed again"}: ${history.lost}`;
  else if (startsWork(r) && history.computed) text = `computed again: ${words}`;
  else if ((into === "released" || into === "forgotten") && origin.op === "client-leave") text = `released: ${stimulusWords(origin, key)}`;
  else text = `${into === "memory" ? "in memory" : into}: ${words}`;
  if (into === "memory") {
    history.computed = true;
    history.lost = undefined;
  }
  return text;
}

/** A worker that left or died, as "worker c (killed)"; undefined for any other stimulus. */
function workerGone(event: Event): string | undefined {
  if (event.op !== "worker-lost" && event.op !== "unregister-worker") return undefined;
  const reason = str(event.reason);
  return `worker ${String(event.name)}${reason !== undefined ? ` (${reason})` : ""}`;
}

/** Steps that start computing the key: assigned to a worker, or taken up by one. */
function startsWork(r: TransitionRecord): boolean {
  if (r.machine === "task") return r.to.startsWith("processing") && !r.from.startsWith("processing");
  return r.machine === "wtask" && r.from === "released" && r.to !== "released" && r.to !== "forgotten";
}

function actorWorker(actor: string): string {
  return actor.startsWith("worker.") ? actor.slice("worker.".length) : actor;
}
