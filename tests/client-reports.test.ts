/**
 * A client checks each op on its subject (natsched.<cluster>.client.<id>) before it settles a
 * future: only the scheduler's reports do, and a request there is answered, one reply per op.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";

let cluster: LocalCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

describe("reports on a client's subject", () => {
  it("settle a future only when they are reports; a request is answered per op", async () => {
    let finish: (() => void) | undefined;
    cluster = await LocalCluster.start({ name: "reports", workers: 1, functions: { hold: () => new Promise<number>((resolve) => (finish = () => resolve(1))) }, log: false, configFile: false });
    const client = cluster.client();
    const future = client.submit("hold", [], { key: "held" });
    await cluster.flush();
    const other = cluster.bus.connect("other");
    const subject = `natsched.reports.client.${client.id}`;
    const forged = await other.request(subject, { v: 1, from: "scheduler", ops: [{ op: "bogus", key: "held" }, { op: "key-in-memory", key: "held", nbytes: 8 }, null] });
    expect(forged).toEqual({
      replies: [
        { ok: false, error: { name: "ProtocolError", code: "PROTOCOL", message: 'unknown op "bogus" for the client' } },
        { ok: false, error: { name: "ProtocolError", code: "PROTOCOL", message: "key-in-memory: bad or missing workers" } },
        { ok: false, error: { name: "ProtocolError", code: "PROTOCOL", message: "an op must be an object, got null" } },
      ],
    });
    expect(future.status).toBe("pending");
    expect(await other.request(subject, { v: 2, ops: [] })).toEqual({ replies: [], error: "malformed envelope: unsupported protocol version 2 (this is version 1)" });
    finish!();
    expect(await future.result()).toBe(1);
    // A report, even sent as a request, is one: answered ok and applied.
    const second = client.submit("hold", [], { key: "held-2" });
    await cluster.flush();
    expect(await other.request(subject, { v: 1, from: "scheduler", ops: [{ op: "key-cancelled", key: "held-2", reason: "test" }] })).toEqual({ replies: [{ ok: true }] });
    expect(second.status).toBe("cancelled");
    await other.close();
  });
});

describe("data a client registers on a worker that does not have it", () => {
  it("is lost at once (DATA_LOST), so nobody waits on a holder that cannot deliver", async () => {
    cluster = await LocalCluster.start({ name: "phantom", workers: 1, functions: { inc: (x: number) => x + 1 }, log: false, configFile: false });
    const raw = cluster.bus.connect("raw");
    const reports: { op: string; key: string; error?: { code?: string } }[] = [];
    raw.subscribe("natsched.phantom.client.c", (msg) => reports.push(...(msg.data as { ops: typeof reports }).ops));
    // update-data without the put-data it stands for: worker-0 never got "ph".
    const reply = await raw.request("natsched.phantom.scheduler.client.c", { v: 1, from: "c", ops: [{ op: "update-data", client: "c", data: [{ key: "ph", nbytes: 8, workers: ["worker-0"] }] }] });
    expect(reply).toEqual({ replies: [{ ok: true }] });
    await expect.poll(() => reports.map((r) => `${r.op} ${r.key} ${r.error?.code ?? ""}`.trim())).toEqual(["key-in-memory ph", "key-erred ph DATA_LOST"]);
    expect(cluster.scheduler.core.taskState("ph")).toBe("erred");
    // Data it was really given is confirmed, and stays.
    const client = cluster.client();
    const [d] = await client.scatter([41], { workers: ["worker-0"] });
    expect(await client.submit("inc", [d]).result()).toBe(42);
    expect(cluster.workers.get("worker-0")!.core.tasks.get(d!.key)?.scattered).toBe(false);
    await raw.close();
  });
});
