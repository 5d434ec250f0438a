/**
 * The reasons a transition's `why` records, in words: for `natsched story`. The shapes are
 * the scheduler's (machines/scheduler/placement.ts, stealing.ts, core.ts); anything this
 * does not know is shown as key=value, so a newer log still reads.
 */
import type { TransitionRecord } from "../log/types.js";

export interface ReasonContext {
  /** The scheduler's bandwidth estimate (bytes/s), from its start record: turns missing bytes into seconds. */
  bandwidth?: number;
}

type Why = Record<string, unknown>;

/** Lines explaining the transition's decision; empty when it records none. */
export function explainReasons(record: TransitionRecord, ctx: ReasonContext = {}): string[] {
  const why = record.why;
  if (why === undefined) return explainWithoutWhy(record);
  if (record.machine !== "task") return [formatFields(why)];
  if (why.steal === "aborted") return stealAborted(record, why);
  switch (record.event) {
    case "ASSIGN":
      return placement(record, why, ctx);
    case "STEAL":
      return stealRequest(why);
    case "STEAL_CONFIRM":
      return [`steal ${str(why.requestId)} confirmed by ${str(why.victim)} (the task was ${str(why.state)} there, not started): moved to ${str(why.thief)} (level ${str(why.level)})`, ...stealCosts(why)];
    case "STEAL_REJECT":
      return [`steal ${str(why.requestId)} rejected by ${str(why.victim)} (the task was ${str(why.state)} there): it stays (level ${str(why.level)})`, ...stealCosts(why)];
    case "NO_WORKER":
      return why.rule === "no-candidate" ? ["no running worker can run it (none joined, or none meets its restrictions): it waits for one"] : [formatFields(why)];
    default:
      return [ruleText(why)];
  }
}

function explainWithoutWhy(record: TransitionRecord): string[] {
  if (record.machine !== "task") return [];
  if (record.event === "QUEUE") return ["root-ish task, queuing on: every worker's slots (ceil(nthreads * workerSaturation)) were taken, so it waits in the scheduler's queue, by priority"];
  if (record.event === "WAIT") return ["waits for its dependencies"];
  return [];
}

const PLACEMENT_RULES: Record<string, string> = {
  objective: "the worker where it would start soonest: occupancy / nthreads + missing bytes / bandwidth, ties to the fewest bytes held",
  "only-candidate": "the only candidate (the one worker holding its dependencies, the one its restrictions allow, or the only one running)",
  "least-occupied": "no dependencies, no restrictions, not root-ish: the least occupied worker (round-robin among idle ones)",
  "rootish-queuing": "root-ish task (large group, few small dependencies), queuing on: a worker with a free slot, fewest tasks per thread",
  "co-assign": "root-ish task, queuing off: co-assigned with its group's neighbours in priority order",
};

function placement(record: TransitionRecord, why: Why, ctx: ReasonContext): string[] {
  const rule = str(why.rule);
  const worker = str(why.worker);
  const from = record.from === "queued" ? "out of the scheduler's queue, " : "";
  let head = `to ${worker}, ${from}${PLACEMENT_RULES[rule] ?? `rule ${rule}`}`;
  if (rule === "co-assign" && typeof why.left === "number") head += `; ${why.left} more of its group go to ${worker}`;
  if (rule === "co-assign" && Array.isArray(why.candidates)) head += `; a new run of the group starts on the worker with the least occupancy per thread`;
  const kept = why.inputsKeptLocal as { copy?: unknown; share?: unknown } | undefined;
  if (kept !== undefined && typeof kept === "object") {
    head += `; its group is root-ish, but copying its inputs (${seconds(Number(kept.copy))}) costs more than the work a copy would let another worker take (${seconds(Number(kept.share))}), so it stays with them`;
  }
  const candidates = Array.isArray(why.candidates) ? (why.candidates as unknown[][]) : [];
  if (candidates.length === 0) {
    if (rule === "rootish-queuing") head += ` (${worker} was the only worker with a free slot)`;
    else if (rule === "least-occupied") head += ` (${worker} was the only idle worker, or the only one running)`;
    else if (rule === "co-assign") head += ` (continuing the run its group started on ${worker})`;
    return [head];
  }
  const total = typeof why.n === "number" ? why.n : candidates.length;
  const lines = [`${head}; ${total} candidates${total > candidates.length ? `, best ${candidates.length}` : ""}:`];
  const width = Math.max(...candidates.map((c) => String(c[0]).length));
  for (const c of candidates) {
    const name = String(c[0]).padEnd(width);
    const mark = c[0] === worker ? "  <- chosen" : "";
    lines.push(`  ${name}  ${candidateText(rule, c, ctx)}${mark}`);
  }
  return lines;
}

function candidateText(rule: string, c: unknown[], ctx: ReasonContext): string {
  if (rule === "objective") {
    const [, stack, missing, held] = c as [string, number, number, number];
    const move = typeof ctx.bandwidth === "number" && ctx.bandwidth > 0 ? missing / ctx.bandwidth : undefined;
    const start = move === undefined ? "" : ` = starts in ${seconds(stack + move)}`;
    return `${seconds(stack)} queued per thread + ${bytes(missing)} to move${move === undefined ? "" : ` (${seconds(move)})`}${start}; holds ${bytes(held)}`;
  }
  if (rule === "rootish-queuing") return `${num(c[1])} tasks processing per thread`;
  if (rule === "co-assign") return `${seconds(Number(c[1]))} occupancy per thread`;
  return `${seconds(Number(c[1]))} occupancy`;
}

function stealRequest(why: Why): string[] {
  const lines = [`steal request ${str(why.requestId)}: from ${str(why.victim)} to ${str(why.thief)}, stealable level ${str(why.level)} (0: no dependencies; higher: more transfer per compute)`, ...stealCosts(why)];
  const known = new Set(["victim", "thief", "level", "requestId", "compute", "commThief", "commVictim", "occVictim", "occThief"]);
  const rest = Object.fromEntries(Object.entries(why).filter(([k]) => !known.has(k)));
  if (Object.keys(rest).length > 0) lines.push(`  ${formatFields(rest)}`);
  return lines;
}

/** Why a steal request ended without a confirm or reject deciding it (the core logs `steal: "aborted"`). */
function stealAborted(record: TransitionRecord, why: Why): string[] {
  let reason: string;
  if (why.rule === "steal-reschedule") {
    reason =
      why.cause === "thief-gone"
        ? `${str(why.victim)} gave it up (${str(why.state)}) but the thief is gone: placed afresh`
        : `${str(why.victim)} did not hold the assignment (it answered ${str(why.state)}): placed afresh`;
  } else if (record.event === "FINISH") {
    reason = "its result came first";
  } else if (record.event === "DATA") {
    reason = "its data arrived from elsewhere";
  } else if (record.event === "ERR") {
    reason = typeof why.blame === "string" ? `a dependency failed: ${why.blame}` : typeof why.rule === "string" ? (RULES[why.rule] ?? `rule ${why.rule}`) : "it failed";
  } else {
    reason = typeof why.rule === "string" ? (RULES[why.rule] ?? `rule ${why.rule}`) : "it was released (no longer needed)";
  }
  const where = typeof why.worker === "string" && why.rule !== "steal-reschedule" ? ` (${why.worker})` : "";
  return [`steal ${str(why.requestId)} from ${str(why.victim)} to ${str(why.thief)} (level ${str(why.level)}) aborted: ${reason}${where}`, ...stealCosts(why)];
}

/** The estimated costs and occupancies a steal request was made on (logged again with its outcome). */
function stealCosts(why: Why): string[] {
  const lines: string[] = [];
  const compute = why.compute;
  const commThief = why.commThief;
  const commVictim = why.commVictim;
  if (typeof compute === "number" && typeof commThief === "number" && typeof commVictim === "number") {
    lines.push(`  estimated: compute ${seconds(compute)}, transfer to the thief ${seconds(commThief)}, at the victim ${seconds(commVictim)}`);
    const occVictim = why.occVictim;
    const occThief = why.occThief;
    if (typeof occVictim === "number" && typeof occThief === "number") {
      const thiefStart = occThief + commThief + compute;
      const victimStart = occVictim - (commVictim + compute) / 2;
      lines.push(`  occupancy: victim ${seconds(occVictim)}, thief ${seconds(occThief)}; it pays: thief ${seconds(thiefStart)} (occupancy + transfer + compute) <= victim ${seconds(victimStart)} (occupancy - (transfer + compute) / 2)`);
    }
  }
  return lines;
}

const RULES: Record<string, string> = {
  scatter: "the client scattered it",
  "held-by-joining-worker": "a joining worker already held it",
  "worker-left": "its worker left or died",
  "killed-worker": "it was running on too many workers that died (allowedFailures)",
  "missing-data": "a worker reported the only copy missing",
  "data-lost": "scattered data whose every holder is gone cannot be recomputed",
  "steal-reschedule": "steal answer: the victim no longer had it or the thief is gone, so it is placed afresh",
};

function ruleText(why: Why): string {
  const rule = typeof why.rule === "string" ? why.rule : undefined;
  const rest = Object.fromEntries(Object.entries(why).filter(([k]) => k !== "rule"));
  const restText = Object.keys(rest).length > 0 ? ` (${formatFields(rest)})` : "";
  if (rule !== undefined) return `${RULES[rule] ?? `rule ${rule}`}${restText}`;
  if (typeof why.blame === "string") return `a dependency failed: ${why.blame}`;
  return formatFields(why);
}

export function formatFields(why: Why): string {
  return Object.entries(why)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
}

function str(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function num(value: unknown): string {
  return typeof value === "number" ? String(Number(value.toFixed(3))) : str(value);
}

export function seconds(s: number): string {
  if (!Number.isFinite(s)) return String(s);
  const a = Math.abs(s);
  return a === 0 ? "0 s" : a < 1e-6 ? `${(s * 1e9).toFixed(0)} ns` : a < 1e-3 ? `${(s * 1e6).toFixed(0)} us` : a < 1 ? `${(s * 1e3).toFixed(3)} ms` : `${s.toFixed(3)} s`;
}

function bytes(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} kB` : `${n} B`;
}
