/** `natsched export`: a slice of a multi-actor log that replays on its own. */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../cli/run.js";
import { readLogSync } from "../log/reader.js";
import { concernsKey } from "../log/record-filter.js";
import { replay } from "../replay/replay.js";
import { storyLines } from "../tools/story.js";
import type { LogRecord } from "../log/types.js";
import { recordRun, type RunLog } from "./replay-fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-export-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const path = join(dir, "run.natlog");
let run: RunLog;
let records: LogRecord[];

beforeAll(async () => {
  run = await recordRun({ path });
  records = readLogSync(path).records;
});

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

const byActor = (list: LogRecord[]) => {
  const out = new Map<string, LogRecord[]>();
  for (const r of list) out.set(r.actor, [...(out.get(r.actor) ?? []), r]);
  return out;
};

describe("natsched export --around <key>", () => {
  it("keeps the actors that touched the key, each from its start to its last record of the key, and the slice replays clean", async () => {
    const key = run.bad;
    const out = join(dir, "bad.natlog");
    const { code, out: text } = await cli("export", path, "--around", key, "--out", out);
    expect(code).toBe(0);
    const slice = readLogSync(out);
    expect(slice.problems).toEqual([]);
    expect(text).toContain(`wrote ${out}: ${slice.records.length} of ${records.length} records`);
    expect(slice.records.length).toBeLessThan(records.length);
    expect(statSync(out).size).toBeLessThan(statSync(path).size);
    expect(slice.header.meta).toMatchObject({ slice: { of: path, around: { key } } });
    expect(slice.header.v).toBe(readLogSync(path).header.v); // in its log's format

    const original = byActor(records);
    const touched = [...original].filter(([, list]) => list.some((r) => concernsKey(r, key))).map(([actor]) => actor);
    const sliced = byActor(slice.records);
    expect([...sliced.keys()].sort()).toEqual(touched.sort());
    expect(touched.length).toBeLessThan(original.size);
    for (const [actor, kept] of sliced) {
      const all = original.get(actor)!;
      // A prefix of the actor's records, from its start record...
      expect(kept).toEqual(all.slice(0, kept.length));
      expect(kept[0]!.kind).toBe("start");
      // ...holding all its records of the key, and cut between inputs, never inside one.
      const lastOfKey = all.map((r) => concernsKey(r, key)).lastIndexOf(true);
      expect(kept.length).toBeGreaterThan(lastOfKey);
      const next = all[kept.length];
      if (next !== undefined) expect(next.kind).not.toBe("transition");
    }

    // A slice ends its actors before their stop records: open, which its header says it is on
    // purpose (meta.slice), so replay accepts it; asked to insist, it names each such actor.
    const cutBeforeStop = [...sliced].filter(([, kept]) => kept[kept.length - 1]!.kind !== "stop").map(([actor]) => actor);
    expect(cutBeforeStop.length).toBeGreaterThan(0);
    expect((await replay(out, { openOk: false })).problems.map((p) => `${p.kind} ${p.actor}`).sort()).toEqual(cutBeforeStop.map((a) => `open ${a}`).sort());
    const result = await replay(out);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(Object.keys(result.actors).sort()).toEqual(touched.sort());
    // The key's whole story is in the slice.
    expect(storyLines(slice.records, key)).toEqual(storyLines(records, key));
    const replayed = await cli("replay", out);
    expect(replayed.code).toBe(0);
  });

  it("writes next to the log by default, and says when the log has no such key", async () => {
    const { code } = await cli("export", path, "--around", run.fromScattered);
    expect(code).toBe(0);
    const defaultOut = join(dir, "run.slice.natlog");
    expect(existsSync(defaultOut)).toBe(true);
    expect((await replay(defaultOut)).ok).toBe(true);

    const missing = await cli("export", path, "--around", "no-such-key", "--out", join(dir, "none.natlog"));
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('has no record of the key "no-such-key"');
    const usage = await cli("export", path);
    expect(usage.code).toBe(2);
    expect(usage.err).toContain("--around");
  });
});

describe("natsched export --around <time>", () => {
  it("keeps every actor up to its last input at or before the time; the slice replays clean", async () => {
    const first = records[0]!.t;
    const last = Math.max(...records.map((r) => r.t));
    const elapsed = (last - first) / 2;
    const out = join(dir, "half.natlog");
    const { code } = await cli("export", path, "--around", `+${elapsed}`, "--out", out);
    expect(code).toBe(0);
    const slice = readLogSync(out);
    const cut = first + elapsed;
    expect(slice.records.length).toBeLessThan(records.length);
    expect(slice.records.every((r) => r.t <= cut)).toBe(true);
    const started = [...byActor(records)].filter(([, list]) => list[0]!.t <= cut).map(([actor]) => actor);
    expect([...byActor(slice.records).keys()].sort()).toEqual(started.sort());
    for (const [actor, kept] of byActor(slice.records)) {
      const all = byActor(records).get(actor)!;
      expect(kept).toEqual(all.slice(0, kept.length));
      const next = all[kept.length];
      if (next !== undefined) expect(next.t).toBeGreaterThan(cut);
    }
    // Cut at a time: the actors still running then have no stop record, as a slice may.
    const result = await replay(out);
    expect(result.ok).toBe(true);
    expect(result.problems).toEqual([]);
  });
});
