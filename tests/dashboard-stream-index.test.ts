/**
 * The widget's index of the task stream (dashboard/page/stream-index.ts), checked against a
 * plain scan on a real run's stream: the bars a frame draws for a time range, the bar a
 * click lands on, the rows per worker lane, and the same index built from live deltas.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { StreamIndex } from "../dashboard/page/stream-index.js";
import type { LogRecord } from "../log/types.js";
import { taskStreamOf, TaskStreamBuilder, type TaskStream } from "../tools/task-stream.js";
import { embeddedRun, simulatedRun } from "./support/task-stream-runs.js";

let records: LogRecord[];
let stream: TaskStream;
beforeAll(async () => {
  records = await embeddedRun();
  stream = taskStreamOf(records);
}, 60_000);

function scan(index: StreamIndex, row: number, t0: number, t1: number): number[] {
  const r = index.rows[row]!;
  return index.bars.flatMap((bar, i) => (bar.worker === r.worker && bar.lane === r.lane && bar.end >= t0 && bar.start <= t1 ? [i] : [])).sort((a, b) => index.bars[a]!.start - index.bars[b]!.start);
}

describe("StreamIndex", () => {
  it("has a row per worker lane, in the workers' order", () => {
    const index = new StreamIndex();
    index.set(stream);
    expect(index.rows.map((r) => `${r.worker}/${r.lane}`)).toEqual(["alpha/0", "alpha/1", "beta/0", "beta/1", "gamma/0"]);
    expect(index.rowsOf("beta")).toEqual({ first: 2, count: 2 });
    expect(index.marked.map((i) => index.bars[i]!.outcome).sort()).toEqual(stream.bars.filter((b) => b.outcome !== "ok" && b.outcome !== "running").map((b) => b.outcome).sort());
  });

  it("finds the bars in any time range as a scan does, and the bar under a click", () => {
    for (const s of [stream, taskStreamOf(simulatedRun())]) {
      const index = new StreamIndex();
      index.set(s);
      const step = s.end / 37;
      for (let row = 0; row < index.rows.length; row++) {
        for (let t0 = -step; t0 < s.end + step; t0 += step) {
          expect([...index.barsIn(row, t0, t0 + 2.5 * step)]).toEqual(scan(index, row, t0, t0 + 2.5 * step));
        }
      }
      for (const [i, bar] of s.bars.entries()) {
        const row = index.rowsOf(bar.worker)!.first + bar.lane;
        expect(index.hit(row, (bar.start + bar.end) / 2, 0)).toBe(i);
      }
      expect(index.hit(0, s.end + 10, 1)).toBe(-1);
    }
  });

  it("built from live deltas, holds what a whole stream gives it", () => {
    const builder = new TaskStreamBuilder();
    const live = new StreamIndex();
    records.forEach((record, i) => {
      builder.add(record);
      if (i % 50 === 0) live.append(builder.drain());
    });
    live.append(builder.drain());
    const whole = new StreamIndex();
    whole.set(stream);
    expect(live.rows).toEqual(whole.rows);
    for (let row = 0; row < whole.rows.length; row++) {
      expect([...live.barsIn(row, -1, stream.end + 1)].map((i) => live.bars[i])).toEqual([...whole.barsIn(row, -1, stream.end + 1)].map((i) => whole.bars[i]));
    }
    expect(live.transfers.map((x) => x.start)).toEqual([...stream.transfers].map((x) => x.start).sort((a, b) => a - b));
    expect(live.deaths).toEqual(stream.deaths);
  });
});
