/**
 * The benchmark task functions. The embedded cluster registers them directly; NATS worker
 * processes load this module (`natsched worker --functions bench/functions.ts`).
 */
import { getHeapStatistics } from "node:v8";

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Peak heap, sampled from inside the task functions every `every` calls (embedded W6 only).
 * A timer cannot do it: while the embedded cluster works through a burst, its message loop
 * runs in microtasks and no timer or setImmediate callback runs until the burst is over
 * (a whole W1 run can pass without one interval tick).
 */
export const heapProbe = { every: 0, calls: 0, peak: 0 };

function probeHeap(): void {
  if (heapProbe.every > 0 && ++heapProbe.calls % heapProbe.every === 0) heapProbe.peak = Math.max(heapProbe.peak, getHeapStatistics().used_heap_size);
}

/**
 * Called at the start of every W8 task, in the process that runs it: the embedded W8 samples
 * the workers' stored bytes from here too, since its interval timer may not fire while the
 * cluster works through a burst (see heapProbe). NATS worker processes leave it unset.
 */
export const taskProbe: { hook: (() => void) | null } = { hook: null };

/** W3's task length and W4's, in ms (the shapes fix them at 50 and 1). */
export const SLOW_MS = 50;
export const FAST_MS = 1;

export const FUNCTIONS = {
  noop: (x: unknown) => x,
  one: (_i: unknown) => {
    probeHeap();
    return 1;
  },
  add: (...xs: number[]) => {
    probeHeap();
    let s = 0;
    for (const x of xs) s += x;
    return s;
  },
  slow: async (_data: unknown, i: number) => {
    await sleep(SLOW_MS);
    return i;
  },
  fast: async (x: ArrayLike<number>, _i: number) => {
    await sleep(FAST_MS);
    return x.length;
  },
  work: async (duration: number) => {
    await sleep(duration * 1000);
    return duration;
  },
  /** W8: a root task's output, `bytes` of one repeated value (Uint8Array: raw bytes on NATS). */
  chunk: (i: number, bytes: number) => {
    taskProbe.hook?.();
    return new Uint8Array(bytes).fill(i & 255);
  },
  /** W8: one pairwise reduction; an output as large as its inputs, as summing two arrays gives. */
  combine: (a: Uint8Array, b: Uint8Array) => {
    taskProbe.hook?.();
    const out = a.slice();
    out[0] = (a[0]! + b[0]!) & 255;
    return out;
  },
  /** SOAK (bench/soak-round.ts): a task that succeeds, and one that always fails, naming its tag. */
  soakInc: (x: number) => x + 1,
  soakFail: (tag: string) => {
    throw new Error(`soak failure ${tag}`);
  },
};

export default FUNCTIONS;
