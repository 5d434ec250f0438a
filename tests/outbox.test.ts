/** Outbox: an actor's ops batched per subject and published at the end of the turn. */
import { describe, expect, it, vi } from "vitest";
import { Outbox } from "../actors/outbox.js";
import type { Payload, Transport } from "../transport/types.js";
import { until } from "./support/until.js";

interface Sent {
  subject: string;
  ops: unknown[];
}

/** A transport that records what is published; `failOn` makes publishing to that subject throw. */
function recordingTransport(failOn?: string): { transport: Transport; sent: Sent[] } {
  const sent: Sent[] = [];
  const transport = {
    closed: false,
    publish(subject: string, data: Payload) {
      if (subject === failOn) throw new Error(`cannot publish to ${subject}`);
      sent.push({ subject, ops: (data as { ops: unknown[] }).ops });
    },
  } as unknown as Transport;
  return { transport, sent };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("Outbox", () => {
  it("publishes one envelope per subject at the end of the turn, subjects in the order of their first op", async () => {
    const { transport, sent } = recordingTransport();
    const outbox = new Outbox<{ op: string; n: number }>(transport, "me");
    outbox.send("b", { op: "x", n: 1 });
    outbox.send("a", { op: "x", n: 2 });
    outbox.send("b", { op: "x", n: 3 });
    expect(sent).toEqual([]);
    await turn();
    expect(sent).toEqual([
      { subject: "b", ops: [{ op: "x", n: 1 }, { op: "x", n: 3 }] },
      { subject: "a", ops: [{ op: "x", n: 2 }] },
    ]);
  });

  it("starts a fresh batch after publishing: an envelope already sent never changes", async () => {
    const { transport, sent } = recordingTransport();
    const outbox = new Outbox<{ op: string; n: number }>(transport, "me");
    outbox.send("a", { op: "x", n: 1 });
    await turn();
    outbox.send("a", { op: "x", n: 2 });
    outbox.send("a", { op: "x", n: 3 });
    await turn();
    expect(sent).toEqual([
      { subject: "a", ops: [{ op: "x", n: 1 }] },
      { subject: "a", ops: [{ op: "x", n: 2 }, { op: "x", n: 3 }] },
    ]);
  });

  it("keeps lazy ops for the linger timer, and sends them with the next urgent op to their subject", async () => {
    const { transport, sent } = recordingTransport();
    const outbox = new Outbox<{ op: string; n: number }>(transport, "me", { linger: { ms: 200 } });
    // Both subjects were just published to: they are not quiet, so their lazy ops linger.
    outbox.send("a", { op: "urgent", n: 0 });
    outbox.send("b", { op: "urgent", n: 0 });
    await turn();
    sent.length = 0;
    outbox.send("a", { op: "lazy", n: 1 }, true);
    outbox.send("b", { op: "lazy", n: 2 }, true);
    await turn();
    expect(sent).toEqual([]);
    outbox.send("b", { op: "urgent", n: 3 });
    await turn();
    expect(sent).toEqual([{ subject: "b", ops: [{ op: "lazy", n: 2 }, { op: "urgent", n: 3 }] }]);
    await until(() => sent.length === 2, 5000);
    expect(sent).toEqual([
      { subject: "b", ops: [{ op: "lazy", n: 2 }, { op: "urgent", n: 3 }] },
      { subject: "a", ops: [{ op: "lazy", n: 1 }] },
    ]);
  });

  it("sends a quiet subject's lingering ops with the turn's urgent publish instead of waiting for the timer", async () => {
    const { transport, sent } = recordingTransport();
    let now = 1000;
    const outbox = new Outbox<{ op: string; n: number }>(transport, "me", { linger: { ms: 50, matches: (s) => s.startsWith("client.") }, now: () => now });
    outbox.send("worker.w", { op: "compute", n: 1 });
    outbox.send("client.c", { op: "in-memory", n: 1 });
    await turn();
    // Never published to before: quiet, so it rides along with the urgent batch.
    expect(sent).toEqual([
      { subject: "worker.w", ops: [{ op: "compute", n: 1 }] },
      { subject: "client.c", ops: [{ op: "in-memory", n: 1 }] },
    ]);
    // Published to 49 ms ago: it lingers, for company...
    now += 49;
    outbox.send("worker.w", { op: "compute", n: 2 });
    outbox.send("client.c", { op: "in-memory", n: 2 });
    await turn();
    expect(sent).toHaveLength(3);
    outbox.send("client.c", { op: "in-memory", n: 3 });
    // ...until the timer, which sends what joined it in one message.
    await until(() => sent.length === 4, 5000);
    expect(sent[3]).toEqual({ subject: "client.c", ops: [{ op: "in-memory", n: 2 }, { op: "in-memory", n: 3 }] });
    // Quiet again after the linger time: the next urgent turn takes it along.
    now += 50;
    outbox.send("client.c", { op: "in-memory", n: 4 });
    outbox.send("worker.w", { op: "compute", n: 3 });
    await turn();
    expect(sent.slice(4)).toEqual([
      { subject: "client.c", ops: [{ op: "in-memory", n: 4 }] },
      { subject: "worker.w", ops: [{ op: "compute", n: 3 }] },
    ]);
  });

  it("sets a linger timer only for ops still waiting at the end of the turn (a cleared timer would still wake the loop)", async () => {
    const { transport, sent } = recordingTransport();
    let now = 1000;
    const outbox = new Outbox<{ op: string; n: number }>(transport, "me", { linger: { ms: 50, matches: (s) => s.startsWith("client.") }, now: () => now });
    const timers = vi.spyOn(globalThis, "setTimeout");
    try {
      // The urgent op's flush takes the quiet subject's lingering op along: no timer.
      outbox.send("client.c", { op: "in-memory", n: 1 });
      outbox.send("worker.w", { op: "compute", n: 1 });
      await turn();
      expect(sent).toHaveLength(2);
      expect(timers).not.toHaveBeenCalled();
      // Published to just now: this one waits, and the timer is set for it.
      now += 1;
      outbox.send("client.c", { op: "in-memory", n: 2 });
      await turn();
      expect(timers).toHaveBeenCalledTimes(1);
      await until(() => sent.length === 3, 5000);
      expect(sent[2]).toEqual({ subject: "client.c", ops: [{ op: "in-memory", n: 2 }] });
    } finally {
      timers.mockRestore();
    }
  });

  it("loses only the batch whose publish threw: the others go out, now or at the next flush", () => {
    const { transport, sent } = recordingTransport("bad");
    const outbox = new Outbox<{ op: string; n: number }>(transport, "me");
    outbox.send("a", { op: "x", n: 1 });
    outbox.send("bad", { op: "x", n: 2 });
    outbox.send("c", { op: "x", n: 3 });
    expect(() => outbox.flush()).toThrow("cannot publish to bad");
    expect(sent).toEqual([{ subject: "a", ops: [{ op: "x", n: 1 }] }]);
    outbox.flush();
    expect(sent).toEqual([
      { subject: "a", ops: [{ op: "x", n: 1 }] },
      { subject: "c", ops: [{ op: "x", n: 3 }] },
    ]);
    outbox.flush();
    expect(sent).toHaveLength(2);
  });

  it("flushAll after a throw keeps the batches it did not reach", () => {
    const { transport, sent } = recordingTransport("bad");
    const outbox = new Outbox<{ op: string; n: number }>(transport, "me", { linger: { ms: 1000 } });
    outbox.send("bad", { op: "x", n: 1 }, true);
    outbox.send("c", { op: "x", n: 2 }, true);
    expect(() => outbox.flushAll()).toThrow("cannot publish to bad");
    expect(sent).toEqual([]);
    outbox.flushAll();
    expect(sent).toEqual([{ subject: "c", ops: [{ op: "x", n: 2 }] }]);
  });

  it("joins consecutive free-keys to one subject into one op", async () => {
    const { transport, sent } = recordingTransport();
    const outbox = new Outbox<{ op: "free-keys"; keys: string[] }>(transport, "me");
    outbox.send("w", { op: "free-keys", keys: ["a"] });
    outbox.send("w", { op: "free-keys", keys: ["b"] });
    await turn();
    expect(sent).toEqual([{ subject: "w", ops: [{ op: "free-keys", keys: ["a", "b"] }] }]);
  });
});

describe("subjects", () => {
  it("names a worker's, its data's and a client's subject once per name: the same string every time", async () => {
    const { subjects } = await import("../transport/subjects.js");
    const s = subjects("c1");
    expect(s.worker("w-1")).toBe("natsched.c1.worker.w-1");
    expect(s.workerData("w-1")).toBe("natsched.c1.data.w-1");
    expect(s.client("k")).toBe("natsched.c1.client.k");
    expect(Object.is(s.worker("w-1"), s.worker("w-1"))).toBe(true);
    for (let i = 0; i < 5000; i++) expect(s.client(`c${i}`)).toBe(`natsched.c1.client.c${i}`);
    expect(s.client("k")).toBe("natsched.c1.client.k");
  });
});
