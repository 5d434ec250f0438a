/** client.wait, client.asCompleted and progress on the embedded cluster (tests/nats-client-waits.test.ts: on NATS). */
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadOptionError, LocalCluster, TimeoutError, type Client, type Future } from "../index.js";

/** Tasks that finish when the test opens their gate: completion order is the test's choice. */
const gates = new Map<string, () => void>();
const opened = new Map<string, Promise<void>>();
function gate(name: string): Promise<void> {
  let p = opened.get(name);
  if (p === undefined) opened.set(name, (p = new Promise<void>((resolve) => gates.set(name, resolve))));
  return p;
}
const open = (name: string) => {
  void gate(name);
  gates.get(name)!();
};
const functions = {
  held: async (name: string, value: number) => {
    await gate(name);
    return value;
  },
  failHeld: async (name: string) => {
    await gate(name);
    throw new Error(`failed ${name}`);
  },
  inc: (x: number) => x + 1,
};

let cluster: LocalCluster;
let client: Client;
let n = 0;
const fresh = () => `g${n++}`;

beforeAll(async () => {
  cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 4, functions, log: false, configFile: false });
  client = cluster.client();
});
afterAll(async () => {
  for (const resolve of gates.values()) resolve();
  await cluster?.close();
});

describe("client.wait", () => {
  it("ALL_COMPLETED waits for every future; an erred one counts as done and does not reject", async () => {
    const [a, b] = [fresh(), fresh()];
    const fs = [client.submit("held", [a, 1]), client.submit("failHeld", [b])];
    const waiting = client.wait(fs);
    open(a);
    let settled = false;
    void waiting.then(() => (settled = true));
    await fs[0]!.wait();
    expect(settled).toBe(false);
    open(b);
    const { done, notDone } = await waiting;
    expect(done.map((f) => f.status).sort()).toEqual(["error", "finished"]);
    expect(notDone).toEqual([]);
  });

  it("FIRST_COMPLETED returns the first done and the rest not done", async () => {
    const [a, b] = [fresh(), fresh()];
    const fa = client.submit("held", [a, 1]);
    const fb = client.submit("held", [b, 2]);
    const waiting = client.wait([fa, fb], { returnWhen: "FIRST_COMPLETED" });
    open(b);
    const { done, notDone } = await waiting;
    expect(done).toEqual([fb]);
    expect(notDone).toEqual([fa]);
    open(a);
  });

  it("FIRST_EXCEPTION returns at the first failure, before the others finish", async () => {
    const [a, b] = [fresh(), fresh()];
    const slow = client.submit("held", [a, 1]);
    const bad = client.submit("failHeld", [b]);
    const waiting = client.wait([slow, bad], { returnWhen: "FIRST_EXCEPTION" });
    open(b);
    const { done, notDone } = await waiting;
    expect(done).toEqual([bad]);
    expect(notDone).toEqual([slow]);
    open(a);
  });

  it("rejects with TimeoutError past its timeout, and refuses a bad returnWhen", async () => {
    const a = fresh();
    const f = client.submit("held", [a, 1]);
    const error = await client.wait([f], { timeout: 50 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).message).toContain("1 of 1 futures not done");
    await expect(client.wait([f], { returnWhen: "SOMETIMES" as never })).rejects.toBeInstanceOf(BadOptionError);
    open(a);
  });
});

describe("client.asCompleted", () => {
  it("yields futures in the order they complete, and takes more while iterating", async () => {
    const [a, b, c, d] = [fresh(), fresh(), fresh(), fresh()];
    const fa = client.submit("held", [a, 1]);
    const fb = client.submit("held", [b, 2]);
    const fc = client.submit("held", [c, 3]);
    const ac = client.asCompleted([fa, fb, fc]);
    const seen: Future[] = [];
    open(b);
    let added: Future | undefined;
    for await (const f of ac) {
      seen.push(f as Future);
      if (seen.length === 1) {
        added = client.submit("held", [d, 4]);
        ac.add(added);
        open(d);
        await added.wait();
        open(c);
      } else if (seen.length === 3) open(a);
    }
    expect(seen.map((f) => f.key)).toEqual([fb.key, added!.key, fc.key, fa.key]);
    expect(ac.isEmpty()).toBe(true);
  });

  it("withResults yields [future, result]; a failure is thrown, or yielded with raiseErrors: false", async () => {
    const [a, b] = [fresh(), fresh()];
    const ok = client.submit("held", [a, 41]);
    const bad = client.submit("failHeld", [b]);
    open(a);
    await ok.wait();
    open(b);
    await bad.wait();
    const yielded: unknown[] = [];
    const iterate = async () => {
      for await (const item of client.asCompleted([ok, bad], { withResults: true })) yielded.push(item);
    };
    await expect(iterate()).rejects.toThrow(`failed ${b}`);
    expect(yielded).toEqual([[ok, 41]]);
    const all: [Future, unknown][] = [];
    for await (const item of client.asCompleted([ok, bad], { withResults: true, raiseErrors: false })) all.push(item as [Future, unknown]);
    expect(all[0]).toEqual([ok, 41]);
    expect(all[1]![0]).toBe(bad);
    expect((all[1]![1] as Error).message).toContain(`failed ${b}`);
  });
});

describe("progress", () => {
  it("writes a line per task prefix as counts change, when the stream is not a TTY", async () => {
    const names = [fresh(), fresh(), fresh()];
    const fs = [...names.map((g, i) => client.submit("held", [g, i])), ...client.map("inc", [1, 2])];
    const out = new PassThrough();
    let text = "";
    out.on("data", (d: Buffer) => (text += d.toString()));
    const drawing = client.progress(fs, { stream: out, interval: 20 });
    for (const g of names) open(g);
    await drawing;
    const lines = text.trim().split("\n");
    expect(lines.some((l) => /^held\s+\[[#-]+\]\s+\d+% [0-2]\/3$/.test(l))).toBe(true);
    expect(lines.slice(-2)).toEqual([expect.stringMatching(/^held\s+\[#+\] 100% 3\/3$/), expect.stringMatching(/^inc\s+\[#+\] 100% 2\/2$/)]);
    expect(text).not.toContain("\x1b[");
  });

  it("redraws in place on a TTY, and marks erred tasks", async () => {
    const [a, b] = [fresh(), fresh()];
    const fs = [client.submit("held", [a, 1]), client.submit("failHeld", [b])];
    const out = Object.assign(new PassThrough(), { isTTY: true, columns: 100 });
    let text = "";
    out.on("data", (d: Buffer) => (text += d.toString()));
    const drawing = client.progress(fs, { stream: out, interval: 10 });
    open(a);
    open(b);
    await drawing;
    expect(text).toContain("\x1b[2K");
    expect(text).toMatch(/\x1b\[\d+A/);
    expect(text).toMatch(/failHeld\s+\[#+\] 100% 1\/1 \(1 erred\)/);
  });
});
