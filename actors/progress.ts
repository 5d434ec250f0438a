/**
 * A terminal progress bar per task prefix, as Dask's `progress(futures)`: redrawn in place on
 * a TTY, plain lines (only when counts change, at most once an interval) otherwise, so a CI
 * log or a file gets a readable record. A few lines of ANSI, no dependency.
 */
import { checkTimeout } from "../machines/client/arguments.js";
import { BadOptionError } from "../machines/errors.js";
import { keySplit } from "../machines/graph/keys.js";
import type { Future } from "./client.js";

export interface ProgressOptions {
  /** Where to draw (default process.stderr). Drawn in place when `isTTY`, as lines otherwise. */
  stream?: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  /** Milliseconds between redraws (default 100 on a TTY, 1000 otherwise). */
  interval?: number;
}

interface PrefixCount {
  total: number;
  finished: number;
  erred: number;
  cancelled: number;
}

/** Counts per task prefix, in the order prefixes first appear. */
export function countByPrefix(futures: readonly Future[]): Map<string, PrefixCount> {
  const out = new Map<string, PrefixCount>();
  for (const f of futures) {
    const prefix = keySplit(f.key);
    let c = out.get(prefix);
    if (c === undefined) out.set(prefix, (c = { total: 0, finished: 0, erred: 0, cancelled: 0 }));
    c.total++;
    if (f.status === "finished") c.finished++;
    else if (f.status === "error") c.erred++;
    else if (f.status === "cancelled") c.cancelled++;
  }
  return out;
}

/** One line: `inc   [########--------]  50%  120/240  (2 erred)`. */
export function progressLine(prefix: string, c: PrefixCount, nameWidth: number, barWidth: number): string {
  const done = c.finished + c.erred + c.cancelled;
  const filled = c.total === 0 ? barWidth : Math.floor((done / c.total) * barWidth);
  const pct = c.total === 0 ? 100 : Math.floor((done / c.total) * 100);
  const notes = [c.erred > 0 ? `${c.erred} erred` : "", c.cancelled > 0 ? `${c.cancelled} cancelled` : ""].filter(Boolean).join(", ");
  return `${prefix.padEnd(nameWidth)} [${"#".repeat(filled)}${"-".repeat(barWidth - filled)}] ${String(pct).padStart(3)}% ${done}/${c.total}${notes ? ` (${notes})` : ""}`;
}

/**
 * Draws the progress of `futures` until every one is done (finished, erred or cancelled), then
 * resolves. It never rejects for failed tasks: they show as erred.
 */
export async function progress(futures: readonly Future[], opts: ProgressOptions = {}): Promise<void> {
  const stream = opts.stream ?? process.stderr;
  const tty = stream.isTTY === true;
  if (opts.interval !== undefined) checkTimeout({ timeout: opts.interval });
  if (opts.interval === 0) throw new BadOptionError("interval", "milliseconds > 0");
  const interval = opts.interval ?? (tty ? 100 : 1000);
  const all = [...futures];
  let drawnLines = 0;
  let lastText = "";
  const draw = (final: boolean): void => {
    const counts = countByPrefix(all);
    const nameWidth = Math.max(4, ...[...counts.keys()].map((p) => p.length));
    const barWidth = Math.max(10, Math.min(40, (stream.columns ?? 80) - nameWidth - 30));
    const lines = [...counts].map(([p, c]) => progressLine(p, c, nameWidth, barWidth));
    const text = lines.join("\n");
    if (tty) {
      const up = drawnLines > 0 ? `\x1b[${drawnLines}A` : "";
      stream.write(`${up}${lines.map((l) => `\x1b[2K${l}\n`).join("")}`);
      drawnLines = lines.length;
    } else if (text !== lastText || final) {
      if (text !== lastText) stream.write(`${text}\n`);
    }
    lastText = text;
  };
  draw(false);
  let left = all.filter((f) => f.status === "pending");
  while (left.length > 0) {
    await Promise.race([new Promise((r) => setTimeout(r, interval)), Promise.all(left.map((f) => f.wait()))]);
    left = left.filter((f) => f.status === "pending");
    draw(left.length === 0);
  }
}
