/** Outbox: an actor's ops batched per subject and published at the end of the turn. */
import { describe, expect, it } from "vitest";
import { Outbox } from "../actors/outbox.js";
import type { Payload, Transport } from "../transport/types.js";

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
    const outbox = new Outbox<{ op: string; n: number }>(transport, "me", { linger: { ms: 30 } });
    outbox.send("a", { op: "lazy", n: 1 }, true);
    outbox.send("b", { op: "lazy", n: 2 }, true);
    await turn();
    expect(sent).toEqual([]);
    outbox.send("b", { op: "urgent", n: 3 });
    await turn();
    expect(sent).toEqual([{ subject: "b", ops: [{ op: "lazy", n: 2 }, { op: "urgent", n: 3 }] }]);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(sent).toEqual([
      { subject: "b", ops: [{ op: "lazy", n: 2 }, { op: "urgent", n: 3 }] },
      { subject: "a", ops: [{ op: "lazy", n: 1 }] },
    ]);
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
