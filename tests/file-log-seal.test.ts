/**
 * When FileLogSink writes a part-full batch (log/file-log.ts): on the first record that comes
 * 25 ms or more after the batch's first, or 100 ms after its first when none comes. Fake
 * timers and clock: a small batch is written on the actors' thread, at once, so the file
 * shows each seal as it happens.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { FileLogSink, readLogSync, type LogRecord } from "../log/index.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-seal-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.useRealTimers());

const stop = (seq: number): LogRecord => ({ actor: "s", seq, t: seq, kind: "stop" });
const written = (path: string): number[] => readLogSync(path).records.map((r) => r.seq);

async function openSink(name: string): Promise<{ sink: FileLogSink; path: string }> {
  const path = join(dir, name);
  const sink = await FileLogSink.open(path);
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  return { sink, path };
}

describe("a file log's part-full batch", () => {
  it("goes with the first record that comes 25 ms or more after its first", async () => {
    const { sink, path } = await openSink("flowing.natlog");
    sink.append(stop(0));
    vi.advanceTimersByTime(10);
    sink.append(stop(1));
    expect(written(path)).toEqual([]);
    vi.advanceTimersByTime(20);
    // 30 ms after the batch's first record: the batch goes, this record starts the next.
    sink.append(stop(2));
    expect(written(path)).toEqual([0, 1]);
    vi.advanceTimersByTime(24);
    sink.append(stop(3));
    expect(written(path)).toEqual([0, 1]);
    vi.advanceTimersByTime(1);
    sink.append(stop(4));
    expect(written(path)).toEqual([0, 1, 2, 3]);
    vi.useRealTimers();
    await sink.close();
    expect(written(path)).toEqual([0, 1, 2, 3, 4]);
  });

  it("goes 100 ms after its first record when no other comes, and a batch younger than 25 ms waits for its own 100", async () => {
    const { sink, path } = await openSink("quiet.natlog");
    sink.append(stop(0));
    vi.advanceTimersByTime(99);
    expect(written(path)).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(written(path)).toEqual([0]);
    // Records keep sealing batches; the timer set for the first batch finds a young one at 100 ms.
    sink.append(stop(1)); // t = 100: a batch, and the timer for t = 200
    vi.advanceTimersByTime(90);
    sink.append(stop(2)); // t = 190: the batch of 1 goes; a new one starts
    expect(written(path)).toEqual([0, 1]);
    vi.advanceTimersByTime(10); // t = 200: the batch is 10 ms old, the timer waits until t = 290
    expect(written(path)).toEqual([0, 1]);
    vi.advanceTimersByTime(89);
    expect(written(path)).toEqual([0, 1]);
    vi.advanceTimersByTime(1);
    expect(written(path)).toEqual([0, 1, 2]);
    vi.useRealTimers();
    await sink.close();
  });
});
