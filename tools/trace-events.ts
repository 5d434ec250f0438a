/**
 * A task stream as Chrome Trace Event JSON (the format Perfetto and chrome://tracing open):
 * a process per worker, a thread per executor lane with a complete ("X") event per
 * execution, and, on threads of their own below the lanes, the transfers each worker sent
 * and received and the steals it gave up and took, each pair joined by a flow ("s" -> "f")
 * arrow from sender to receiver, victim to thief. A worker's death is a process-wide instant.
 *
 * Flow events attach to the slice that encloses them on their thread, so both ends of a
 * transfer or steal get a slice of their own; those tracks are packed onto as many threads
 * as overlap needs, so slices on one thread never cross.
 */
import { packLanes } from "./interval-lanes.js";
import type { TaskStream } from "./task-stream-types.js";

export interface TraceEvent {
  ph: string;
  name: string;
  pid: number;
  tid?: number;
  ts?: number;
  dur?: number;
  cat?: string;
  id?: number;
  bp?: string;
  s?: string;
  args?: Record<string, unknown>;
}

export interface TraceFile {
  traceEvents: TraceEvent[];
  displayTimeUnit: "ms";
  otherData: Record<string, unknown>;
}

/** Threads of a worker's process past its lanes: sends, receives and steals each start at these ids. */
const TRACKS = { sent: 1000, received: 2000, steals: 3000 } as const;
const US = 1e6;
const us = (seconds: number): number => Math.round(seconds * US);

interface Slice {
  pid: number;
  track: keyof typeof TRACKS;
  name: string;
  cat: string;
  start: number;
  end: number;
  args: Record<string, unknown>;
  flow: { id: number; end: "s" | "f" };
}

export function traceEventsOf(stream: TaskStream, meta: Record<string, unknown> = {}): TraceFile {
  const events: TraceEvent[] = [];
  const pids = new Map<string, number>();
  const pidOf = (worker: string): number => {
    let pid = pids.get(worker);
    if (pid === undefined) {
      pid = pids.size + 1;
      pids.set(worker, pid);
      const threads = stream.workers.find((w) => w.name === worker)?.threads;
      events.push({ ph: "M", name: "process_name", pid, args: { name: `worker ${worker}${threads !== undefined ? ` (${threads} threads)` : ""}` } });
      events.push({ ph: "M", name: "process_sort_index", pid, args: { sort_index: pid } });
    }
    return pid;
  };
  for (const worker of stream.workers) {
    const pid = pidOf(worker.name);
    for (let lane = 0; lane < worker.lanes; lane++) events.push({ ph: "M", name: "thread_name", pid, tid: lane, args: { name: `thread ${lane}` } });
  }
  for (const bar of stream.bars) {
    events.push({ ph: "X", name: bar.key, cat: bar.prefix, pid: pidOf(bar.worker), tid: bar.lane, ts: us(bar.start), dur: Math.max(us(bar.end) - us(bar.start), 0), args: { outcome: bar.outcome, worker: bar.worker } });
  }

  const slices: Slice[] = [];
  let flowId = 0;
  for (const x of stream.transfers) {
    const id = ++flowId;
    const args = { from: x.from, to: x.to, bytes: x.bytes ?? null, ok: x.bytes !== undefined };
    slices.push({ pid: pidOf(x.from), track: "sent", name: x.key, cat: "transfer", start: x.start, end: x.end, args, flow: { id, end: "s" } });
    slices.push({ pid: pidOf(x.to), track: "received", name: x.key, cat: "transfer", start: x.start, end: x.end, args, flow: { id, end: "f" } });
  }
  for (const s of stream.steals) {
    const id = ++flowId;
    const end = s.end ?? stream.end;
    const args = { victim: s.victim, thief: s.thief, outcome: s.outcome };
    slices.push({ pid: pidOf(s.victim), track: "steals", name: `steal ${s.key}`, cat: "steal", start: s.t, end, args, flow: { id, end: "s" } });
    slices.push({ pid: pidOf(s.thief), track: "steals", name: `steal ${s.key}`, cat: "steal", start: s.t, end, args, flow: { id, end: "f" } });
  }
  const groups = new Map<string, Slice[]>();
  for (const slice of slices) {
    const group = `${slice.pid}/${slice.track}`;
    const list = groups.get(group);
    if (list === undefined) groups.set(group, [slice]);
    else list.push(slice);
  }
  for (const group of groups.values()) {
    // At least a microsecond each, so a flow's end always lies inside its slice.
    const spans = group.map((s) => ({ start: us(s.start), end: Math.max(us(s.end), us(s.start) + 1) }));
    const lanes = packLanes(spans);
    const named = new Set<number>();
    group.forEach((slice, i) => {
      const tid = TRACKS[slice.track] + lanes[i]!;
      if (!named.has(tid)) {
        named.add(tid);
        events.push({ ph: "M", name: "thread_name", pid: slice.pid, tid, args: { name: `${slice.track}${lanes[i]! > 0 ? ` ${lanes[i]}` : ""}` } });
      }
      const { start, end } = spans[i]!;
      events.push({ ph: "X", name: slice.name, cat: slice.cat, pid: slice.pid, tid, ts: start, dur: end - start, args: slice.args });
      events.push({ ph: slice.flow.end, name: slice.cat, cat: slice.cat, id: slice.flow.id, pid: slice.pid, tid, ts: start, ...(slice.flow.end === "f" ? { bp: "e" } : {}) });
    });
  }
  for (const death of stream.deaths) {
    events.push({ ph: "i", s: "p", name: "worker died", cat: "death", pid: pidOf(death.worker), tid: 0, ts: us(death.t), args: { worker: death.worker, why: death.why ?? null } });
  }
  return { traceEvents: events, displayTimeUnit: "ms", otherData: { ...meta, runStart: stream.runStart, times: "microseconds from the run's start" } };
}
