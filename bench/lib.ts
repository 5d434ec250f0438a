/**
 * Shared pieces of the benchmark harness: statistics, machine info, the result row shape.
 * Nothing here is timed.
 */
import { readdirSync, readFileSync } from "node:fs";
import { cpus, freemem, loadavg, totalmem } from "node:os";

/** User + system CPU of a /proc `stat` line (a process's or a thread's), in ms (clock ticks of 10 ms). Linux only. */
export function statCpuMs(line: string): number {
  const fields = line.slice(line.lastIndexOf(") ") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU a process has used so far, ms (from /proc). */
export const processCpuMs = (pid: number): number => statCpuMs(readFileSync(`/proc/${pid}/stat`, "utf8"));

/**
 * CPU (ms) that the threads named `name` of these processes have used so far, from each
 * thread's schedstat (ns, exact for a thread that is not running; /proc's stat counts 10 ms
 * ticks). Executor threads name themselves natsched-exec. Linux only: null without /proc.
 */
export function namedThreadsCpuMs(pids: readonly number[], name: string): number | null {
  let ns = 0;
  try {
    for (const pid of pids) {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        try {
          if (readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim() !== name) continue;
          ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
        } catch {
          // the thread ended between the listing and the read
        }
      }
    }
  } catch {
    return null;
  }
  return ns / 1e6;
}

export interface Stats {
  min: number;
  median: number;
  max: number;
  runs: number[];
}

export function stats(xs: readonly number[], digits = 4): Stats {
  if (xs.length === 0) throw new Error("stats of nothing");
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  const r = (x: number): number => Number(x.toPrecision(Math.max(digits, String(Math.round(Math.abs(x))).length)));
  return { min: r(sorted[0]!), median: r(median), max: r(sorted[sorted.length - 1]!), runs: xs.map(r) };
}

export type Op = ">=" | "<=";

export interface Target {
  op: Op;
  value: number;
  /** Judge the worst repetition instead of the median (a bound that must hold every time). */
  worst?: boolean;
  /** How the issue words it. */
  text: string;
}

/** What a workload reports: one row per measured quantity. */
export interface Row {
  /** Stable id, e.g. "W1.n10000.log-on"; the Dask peer row of the same shape uses the same `shape`. */
  id: string;
  workload: string;
  label: string;
  /** Unit of `value`: "tasks/s", "s", "x ideal", "KB/task", ... */
  unit: string;
  higherIsBetter: boolean;
  /** null: not measured (see status/note). */
  value: Stats | null;
  status: "ok" | "not-available" | "error" | "skipped";
  note?: string;
  /** The target for this row, if it has one. */
  target?: Target;
  /** Shape key shared with the Dask peer row to compare with (same unit). */
  shape?: string;
  /** Anything else measured (placement, steal counters, bytes moved...). */
  extra?: Record<string, unknown>;
}

export function unavailable(id: string, workload: string, label: string, unit: string, note: string): Row {
  return { id, workload, label, unit, higherIsBetter: true, value: null, status: "not-available", note };
}

export function meets(value: number, target: Target): boolean {
  return target.op === ">=" ? value >= target.value : value <= target.value;
}

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  node: string;
  platform: string;
  totalMemMB: number;
  freeMemMB: number;
  loadavgAtStart: number[];
  startedAt: string;
}

export function machineInfo(): MachineInfo {
  const c = cpus();
  return {
    cpus: c.length,
    cpuModel: c[0]?.model ?? "unknown",
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    totalMemMB: Math.round(totalmem() / 2 ** 20),
    freeMemMB: Math.round(freemem() / 2 ** 20),
    loadavgAtStart: loadavg().map((x) => Number(x.toFixed(2))),
    startedAt: new Date().toISOString(),
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function randomHex(bytes: number): string {
  let out = "";
  for (let i = 0; i < bytes; i++) out += Math.floor(Math.random() * 256).toString(16).padStart(2, "0");
  return out;
}

/**
 * Python's `random.Random(seed).shuffle(items)` (CPython 3.x, MT19937, integer seed), so a
 * natsched workload runs the tasks in exactly the order the Dask peer script does.
 */
export function pythonShuffle<T>(items: T[], seed: number): T[] {
  const mt = new Uint32Array(624);
  let mti = 625;
  const initGenrand = (s: number): void => {
    mt[0] = s >>> 0;
    for (mti = 1; mti < 624; mti++) {
      const prev = mt[mti - 1]! ^ (mt[mti - 1]! >>> 30);
      mt[mti] = (Math.imul(1812433253, prev) + mti) >>> 0;
    }
  };
  const initByArray = (key: number[]): void => {
    initGenrand(19650218);
    let i = 1;
    let j = 0;
    for (let k = Math.max(624, key.length); k > 0; k--) {
      const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
      mt[i] = ((mt[i]! ^ Math.imul(prev, 1664525)) + key[j]! + j) >>> 0;
      i++;
      j++;
      if (i >= 624) {
        mt[0] = mt[623]!;
        i = 1;
      }
      if (j >= key.length) j = 0;
    }
    for (let k = 623; k > 0; k--) {
      const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
      mt[i] = ((mt[i]! ^ Math.imul(prev, 1566083941)) - i) >>> 0;
      i++;
      if (i >= 624) {
        mt[0] = mt[623]!;
        i = 1;
      }
    }
    mt[0] = 0x80000000;
  };
  const genrand = (): number => {
    if (mti >= 624) {
      for (let kk = 0; kk < 624; kk++) {
        const y = (mt[kk]! & 0x80000000) | (mt[(kk + 1) % 624]! & 0x7fffffff);
        mt[kk] = mt[(kk + 397) % 624]! ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      mti = 0;
    }
    let y = mt[mti++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  };
  if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32) throw new Error("pythonShuffle: seed must be a 32-bit unsigned integer");
  initByArray([seed]);
  const randbelow = (n: number): number => {
    const k = Math.floor(Math.log2(n)) + 1; // n.bit_length()
    let r = genrand() >>> (32 - k);
    while (r >= n) r = genrand() >>> (32 - k);
    return r;
  };
  for (let i = items.length - 1; i > 0; i--) {
    const j = randbelow(i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
