/**
 * The header's checksum: every byte flip in a small log's header and its first frame's head
 * is detected (an error or a problem), never read as a good log. A header written before
 * the checksum (no "crc") still reads.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import { decodeHeaderLine, encodeHeaderLine, makeHeader } from "../log/codec.js";
import { FRAME_HEAD_BYTES } from "../log/frame-format.js";
import { readLogSync } from "../log/reader.js";
import { LOG_FORMAT_FRAMES } from "../log/types.js";
import { LogCorruptError } from "../machines/errors.js";
import { replay } from "../replay/replay.js";
import { functions } from "./replay-fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-header-flips-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const path = join(dir, "small.natlog");
let original: Buffer;
let headerBytes: number;

beforeAll(async () => {
  const cluster = await LocalCluster.start({ workers: 1, functions, log: { path }, configFile: false });
  const client = cluster.client();
  await client.submit<number>("inc", [1]).result();
  await cluster.close();
  original = readFileSync(path);
  headerBytes = original.indexOf(0x0a) + 1;
}, 30_000);

/** Whether the log at `file` is reported as damaged by the reader and by replay. */
async function detected(file: string): Promise<{ reader: boolean; replay: boolean }> {
  let reader: boolean;
  try {
    reader = readLogSync(file).problems.length > 0;
  } catch (error) {
    if (!(error instanceof LogCorruptError)) throw error;
    reader = true;
  }
  let replayed: boolean;
  try {
    const result = await replay(file, { diffState: false });
    replayed = !result.ok || result.problems.length > 0;
  } catch (error) {
    if (!(error instanceof LogCorruptError)) throw error;
    replayed = true;
  }
  return { reader, replay: replayed };
}

describe("the log header's checksum", () => {
  it("is written, and the intact log reads and replays clean", async () => {
    const line = original.toString("utf8", 0, headerBytes - 1);
    expect(line).toMatch(/,"crc":"[0-9a-f]{8}"\} *$/);
    expect(readLogSync(path).header.v).toBe(LOG_FORMAT_FRAMES);
    // The build that wrote it: natsched's version (package.json) and Node's.
    const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    expect(readLogSync(path).header.meta).toMatchObject({ natsched: version, node: process.version });
    expect(await detected(path)).toEqual({ reader: false, replay: false });
  });

  it("a wrong checksum is LogCorruptError with a clear message", () => {
    const line = original.toString("utf8", 0, headerBytes - 1);
    const crc = /"crc":"([0-9a-f]{8})"/.exec(line)![1]!;
    const other = crc.replace(/^./, (c) => (c === "0" ? "1" : "0"));
    const bad = join(dir, "bad-crc.natlog");
    writeFileSync(bad, Buffer.concat([Buffer.from(line.replace(crc, other) + "\n"), original.subarray(headerBytes)]));
    expect(() => readLogSync(bad)).toThrow(LogCorruptError);
    expect(() => readLogSync(bad)).toThrow(`header checksum: recorded ${other}, computed ${crc} (the header is damaged)`);
  });

  it("a header without a checksum (written before it) reads as before", () => {
    const legacy = JSON.stringify(makeHeader({ cluster: "old" }, 5, LOG_FORMAT_FRAMES));
    expect(decodeHeaderLine(legacy)).toEqual({ ok: true, header: makeHeader({ cluster: "old" }, 5, LOG_FORMAT_FRAMES) });
    const written = encodeHeaderLine(makeHeader({ cluster: "new" }, 5, LOG_FORMAT_FRAMES));
    expect(decodeHeaderLine(written.trimEnd())).toEqual({ ok: true, header: makeHeader({ cluster: "new" }, 5, LOG_FORMAT_FRAMES) });
  });

  it("every flip of a byte of the header and of the first frame's head is detected", async () => {
    const end = headerBytes + FRAME_HEAD_BYTES;
    const flipped = join(dir, "flipped.natlog");
    const missed: string[] = [];
    let tried = 0;
    for (let at = 0; at < end; at++) {
      for (const mask of [0xff, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80]) {
        const copy = Buffer.from(original);
        copy[at] = copy[at]! ^ mask;
        writeFileSync(flipped, copy);
        tried++;
        const seen = await detected(flipped);
        if (!seen.reader || !seen.replay) missed.push(`byte ${at} ^ 0x${mask.toString(16)}: reader ${seen.reader}, replay ${seen.replay}`);
      }
    }
    expect(tried).toBe(end * 9);
    expect(missed).toEqual([]);
  }, 120_000);
});
