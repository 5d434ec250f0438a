/**
 * The reasons a transition's `why` records, in words: for `natsched story`. The kinds and
 * their fields are machines/reasons.ts's; a why of no known kind (a log from another
 * version) is shown as key=value, so it still reads.
 */
import type { TransitionRecord } from "../log/types.js";
import { isPlacement, readReason, type AbortedBy, type PlacementReason, type Reason, type StealRequestWhy } from "../machines/reasons.js";
import type { SaturationWhy } from "../machines/scheduler/saturation.js";

export interface ReasonContext {
  /** The scheduler's bandwidth estimate (bytes/s), from its start record: turns missing bytes into seconds. */
  bandwidth?: number;
}

/** Lines explaining the transition's decision; empty when it records none. */
export function explainReasons(record: TransitionRecord, ctx: ReasonContext = {}): string[] {
  const reason = readReason(record);
  if (reason.kind === "none") return explainWithoutWhy(record);
  if (record.machine !== "task" || reason.kind === "unknown") return [formatFields(reason.why)];
  if (isPlacement(reason)) return placement(record, reason, ctx);
  switch (reason.kind) {
    case "steal-aborted":
    case "steal-reschedule":
      return stealAborted(record, reason);
    case "steal-request":
      return stealRequest(reason.why);
    case "steal-confirmed": {
      const why = reason.why;
      return [`steal ${why.requestId} confirmed by ${why.victim} (the task was ${why.state} there, not started): moved to ${why.thief} (level ${why.level})`, ...stealCosts(why)];
    }
    case "steal-rejected": {
      const why = reason.why;
      return [`steal ${why.requestId} rejected by ${why.victim} (the task was ${why.state} there): it stays (level ${why.level})`, ...stealCosts(why)];
    }
    case "no-candidate":
      return ["no running worker can run it (none joined, or none meets its restrictions): it waits for one"];
    default:
      return [decisionText(reason)];
  }
}

function explainWithoutWhy(record: TransitionRecord): string[] {
  if (record.machine !== "task") return [];
  if (record.event === "QUEUE") return ["root-ish task, queuing on: every worker's slots (ceil(nthreads * workerSaturation)) were taken, so it waits in the scheduler's queue, by priority"];
  if (record.event === "WAIT") return ["waits for its dependencies"];
  return [];
}

const PLACEMENT_RULES: Record<PlacementReason["kind"], string> = {
  objective: "the worker where it would start soonest: occupancy / nthreads + missing bytes / bandwidth, ties to the fewest bytes held",
  "only-candidate": "the only candidate (the one worker holding its dependencies, the one its restrictions allow, or the only one running)",
  "least-occupied": "no dependencies, no restrictions, not root-ish: the least occupied worker (round-robin among idle ones)",
  "rootish-queuing": "root-ish task (large group, few small dependencies), queuing on: a worker with a free slot, fewest tasks per thread",
  "co-assign": "root-ish task, queuing off: co-assigned with its group's neighbours in priority order",
};

function placement(record: TransitionRecord, reason: PlacementReason, ctx: ReasonContext): string[] {
  const worker = reason.why.worker;
  const from = record.from === "queued" ? "out of the scheduler's queue, " : "";
  let head = `to ${worker}, ${from}${PLACEMENT_RULES[reason.kind]}`;
  if (reason.kind === "co-assign") {
    head += `; ${reason.why.left} more of its group go to ${worker}`;
    if (reason.why.candidates !== undefined) head += `; a new run of the group starts on the worker with the least occupancy per thread`;
  }
  const kept = reason.kind === "objective" || reason.kind === "only-candidate" || reason.kind === "least-occupied" ? reason.why.inputsKeptLocal : undefined;
  if (kept !== undefined) {
    head += `; its group is root-ish, but copying its inputs (${seconds(kept.copy)}) costs more than the work a copy would let another worker take (${seconds(kept.share)}), so it stays with them`;
  }
  if (reason.kind === "rootish-queuing" && reason.why.saturation !== undefined) head += `; ${saturationText(worker, reason.why.saturation)}`;
  const listed = candidateLines(reason, ctx);
  if (listed.length === 0) {
    if (reason.kind === "rootish-queuing") head += ` (${worker} was the only worker with a free slot)`;
    else if (reason.kind === "least-occupied") head += ` (${worker} was the only idle worker, or the only one running)`;
    else if (reason.kind === "co-assign") head += ` (continuing the run its group started on ${worker})`;
    return [head];
  }
  const n = reason.kind === "only-candidate" ? undefined : reason.why.n;
  const total = n ?? listed.length;
  const lines = [`${head}; ${total} candidates${total > listed.length ? `, best ${listed.length}` : ""}:`];
  const width = Math.max(...listed.map(([name]) => name.length));
  for (const [name, text] of listed) lines.push(`  ${name.padEnd(width)}  ${text}${name === worker ? "  <- chosen" : ""}`);
  return lines;
}

/** Adaptive saturation's slots for the chosen worker, and what set them (machines/scheduler/saturation.ts). */
function saturationText(worker: string, s: SaturationWhy): string {
  // Without figures: a worker that measures no round trips (its tasks run on the scheduler's thread).
  if (s.rtt === undefined || s.duration === undefined || s.nbytes === undefined) {
    return `adaptive saturation: ${worker} may process ${s.slots} (Dask's ceil(1.1 x nthreads): it measures no round trips, its tasks running on the scheduler's thread)`;
  }
  const hold = s.hold === undefined ? "" : `, report hold ${seconds(s.hold)}`;
  const measured = `round trip ${s.rtt < 0 ? "not measured yet" : seconds(s.rtt)}, group's task ${s.duration < 0 ? "not measured yet" : seconds(s.duration)}, output ${s.nbytes < 0 ? "not measured yet" : bytes(s.nbytes)}${hold}`;
  const bound =
    s.limit === "dask"
      ? "Dask's ceil(1.1 x nthreads), something being unmeasured"
      : s.limit === "round-trip"
        ? `Dask's count plus enough to cover the round trip${s.hold === undefined ? "" : " and the worker's report hold"}`
        : s.limit === "cap"
          ? "capped by adaptiveSaturationCap"
          : "bounded by adaptiveSaturationMemory over the output size";
  return `adaptive saturation: ${worker} may process ${s.slots} (${bound}; ${measured})`;
}

/** Each candidate listed, as [name, its figures in words]. */
function candidateLines(reason: PlacementReason, ctx: ReasonContext): [string, string][] {
  switch (reason.kind) {
    case "only-candidate":
      return [];
    case "objective":
      return (reason.why.candidates ?? []).map(([name, stack, missing, held]) => {
        const move = typeof ctx.bandwidth === "number" && ctx.bandwidth > 0 ? missing / ctx.bandwidth : undefined;
        const start = move === undefined ? "" : ` = starts in ${seconds(stack + move)}`;
        return [name, `${seconds(stack)} queued per thread + ${bytes(missing)} to move${move === undefined ? "" : ` (${seconds(move)})`}${start}; holds ${bytes(held)}`];
      });
    case "rootish-queuing":
      return (reason.why.candidates ?? []).map(([name, load]) => [name, `${Number(load.toFixed(3))} tasks processing per thread`]);
    case "co-assign":
      return (reason.why.candidates ?? []).map(([name, load]) => [name, `${seconds(load)} occupancy per thread`]);
    case "least-occupied":
      return (reason.why.candidates ?? []).map(([name, load]) => [name, `${seconds(load)} occupancy`]);
  }
}

function stealRequest(why: StealRequestWhy): string[] {
  const lines = [`steal request ${why.requestId}: from ${why.victim} to ${why.thief}, stealable level ${why.level} (0: no dependencies; higher: more transfer per compute)`, ...stealCosts(why)];
  const request: Record<keyof StealRequestWhy, true> = { victim: true, thief: true, level: true, requestId: true, compute: true, commVictim: true, commThief: true, occVictim: true, occThief: true };
  const rest = Object.fromEntries(Object.entries(why).filter(([k]) => !Object.hasOwn(request, k)));
  if (Object.keys(rest).length > 0) lines.push(`  ${formatFields(rest)}`);
  return lines;
}

/** Why a steal request ended without a confirm or reject deciding it. */
function stealAborted(record: TransitionRecord, reason: Extract<Reason, { kind: "steal-aborted" | "steal-reschedule" }>): string[] {
  const why = reason.why;
  let text: string;
  let where = "";
  if (reason.kind === "steal-reschedule") {
    text =
      reason.why.cause === "thief-gone"
        ? `${why.victim} gave it up (${reason.why.state}) but the thief is gone: placed afresh`
        : `${why.victim} did not hold the assignment (it answered ${reason.why.state}): placed afresh`;
  } else {
    text = abortText(record, reason.by);
    if (reason.by.kind !== "none" && reason.by.kind !== "unknown" && "worker" in reason.by.why) where = ` (${reason.by.why.worker})`;
  }
  return [`steal ${why.requestId} from ${why.victim} to ${why.thief} (level ${why.level}) aborted: ${text}${where}`, ...stealCosts(why)];
}

function abortText(record: TransitionRecord, by: AbortedBy): string {
  if (record.event === "FINISH") return "its result came first";
  if (record.event === "DATA") return "its data arrived from elsewhere";
  if (by.kind === "dependency-erred") return `a dependency failed: ${by.why.blame}`;
  if (by.kind === "none" || by.kind === "task-erred") return record.event === "ERR" ? "it failed" : "it was released (no longer needed)";
  if (by.kind === "unknown") return formatFields(by.why);
  return DECISIONS[by.kind] ?? `rule ${by.why.rule}`;
}

/** The estimated costs and occupancies a steal request was made on (logged again with its outcome). */
function stealCosts(why: StealRequestWhy): string[] {
  const { compute, commThief, commVictim, occVictim, occThief } = why;
  const thiefStart = occThief + commThief + compute;
  const victimStart = occVictim - (commVictim + compute) / 2;
  return [
    `  estimated: compute ${seconds(compute)}, transfer to the thief ${seconds(commThief)}, at the victim ${seconds(commVictim)}`,
    `  occupancy: victim ${seconds(occVictim)}, thief ${seconds(occThief)}; it pays: thief ${seconds(thiefStart)} (occupancy + transfer + compute) <= victim ${seconds(victimStart)} (occupancy - (transfer + compute) / 2)`,
  ];
}

/** The scheduler's other decisions, in words. */
const DECISIONS: Partial<Record<Reason["kind"], string>> = {
  scatter: "the client scattered it",
  "held-by-joining-worker": "a joining worker already held it",
  "worker-left": "its worker left or died",
  "killed-worker": "it was running on too many workers that died (allowedFailures)",
  "missing-data": "a worker reported the only copy missing",
  "data-lost": "scattered data whose every holder is gone cannot be recomputed",
  cancelled: "a client cancelled it, or a task it cancelled no longer needs it",
  retry: "its function failed and it has retries left: run again",
};

/** A decision's words, with its fields other than the rule; a failed dependency by name; else its fields. */
function decisionText(reason: Exclude<Reason, { kind: "none" | "unknown" }>): string {
  if (reason.kind === "dependency-erred") return `a dependency failed: ${reason.why.blame}`;
  const why = reason.why;
  if (!("rule" in why)) return formatFields(why);
  const rest = Object.fromEntries(Object.entries(why).filter(([k]) => k !== "rule"));
  const restText = Object.keys(rest).length > 0 ? ` (${formatFields(rest)})` : "";
  return `${DECISIONS[reason.kind] ?? `rule ${why.rule}`}${restText}`;
}

export function formatFields(why: { readonly [field: string]: unknown }): string {
  return Object.entries(why)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
}

export function seconds(s: number): string {
  if (!Number.isFinite(s)) return String(s);
  const a = Math.abs(s);
  return a === 0 ? "0 s" : a < 1e-6 ? `${(s * 1e9).toFixed(0)} ns` : a < 1e-3 ? `${(s * 1e6).toFixed(0)} us` : a < 1 ? `${(s * 1e3).toFixed(3)} ms` : `${s.toFixed(3)} s`;
}

function bytes(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} kB` : `${n} B`;
}
