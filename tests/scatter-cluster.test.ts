/**
 * Scatter on an embedded cluster (docs/protocol.md, "Scatter"): nobody can overwrite or forge
 * data through the data plane. A raw connection plays the attacker of issue 20 (put-data over
 * a computed key, reserved keys, keys seeded before they are computed); natsched's client
 * scatters the same value twice and clashes on explicit keys; the scatter lease frees what
 * nobody registered, and the run replays exactly.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { LocalCluster } from "../actors/local-cluster.js";
import type { Config } from "../machines/config.js";
import { KeyExistsError } from "../machines/errors.js";
import { tokenize } from "../machines/graph/index.js";
import { PROTOCOL_VERSION } from "../machines/protocol.js";
import { readLogSync } from "../log/reader.js";
import { replay } from "../replay/replay.js";
import { extractWorkload } from "../tools/workload-extract.js";
import type { Transport } from "../transport/types.js";
import { rejection } from "./errors-helpers.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-scatter-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const clusters: LocalCluster[] = [];
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});

async function start(opts: { config?: Partial<Config>; log?: string } = {}): Promise<LocalCluster> {
  const cluster = await LocalCluster.start({
    name: "sc",
    workers: [{ name: "a" }, { name: "b" }],
    functions: { inc: (x: number) => x + 1 },
    log: opts.log === undefined ? false : { path: opts.log },
    configFile: false,
    config: { workStealing: false, ...opts.config },
  });
  clusters.push(cluster);
  return cluster;
}

type PutReply = { ok?: boolean; nbytes?: Record<string, number>; error?: string; code?: string; keys?: string[] };
const put = async (raw: Transport, worker: string, data: Record<string, unknown>) => (await raw.request(`natsched.sc.data.${worker}`, { op: "put-data", data, who: "raw" }, { timeout: 2000 })) as PutReply;
const toScheduler = async (raw: Transport, op: unknown) =>
  ((await raw.request("natsched.sc.scheduler", { v: PROTOCOL_VERSION, from: "raw", ops: [op] }, { timeout: 2000 })) as { replies: { ok: boolean; error?: { code?: string; keys?: string[] } }[] }).replies[0]!;

async function until(what: string, condition: () => boolean): Promise<void> {
  for (let i = 0; !condition(); i++) {
    if (i > 500) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("the attack of issue 20, finding 3", () => {
  it("put-data over a computed key is refused; the future, a new client's submit of the key and a dependent see the true value", async () => {
    const cluster = await start();
    const owner = cluster.client();
    const x = owner.submit<number>("inc", [1], { workers: ["a"] });
    expect(await x.result({ timeout: 5000 })).toBe(2);
    const raw = cluster.bus.connect("raw");
    const overHolder = await put(raw, "a", { [x.key]: 999 });
    // b has no x: it stores the copy, but the scheduler will not count it there.
    const onOther = await put(raw, "b", { [x.key]: 999 });
    const registered = await toScheduler(raw, { op: "update-data", client: "raw", data: [{ key: x.key, nbytes: 8, workers: ["b"] }] });
    expect(await x.result({ timeout: 5000 })).toBe(2);
    const other = cluster.client();
    const same = other.submit<number>("inc", [1]);
    expect(same.key).toBe(x.key);
    expect(await same.result({ timeout: 5000 })).toBe(2);
    // A dependent on b reads x from a, not b's copy.
    expect(await other.submit<number>("inc", [same], { workers: ["b"] }).result({ timeout: 5000 })).toBe(3);
    expect(cluster.workers.get("a")!.store.get(x.key)).toBe(2);
    expect(cluster.workers.get("b")!.store.get(x.key)).toBe(2);
    expect(overHolder).toMatchObject({ code: "KEY_EXISTS", keys: [x.key], error: expect.stringContaining("already") });
    expect(onOther).toMatchObject({ ok: true });
    expect(registered).toMatchObject({ ok: false, error: { code: "KEY_EXISTS", keys: [x.key] } });
    await raw.close();
  });

  it("put-data under __proto__ or constructor is refused as a whole, naming them", async () => {
    const cluster = await start();
    const raw = cluster.bus.connect("raw");
    const data = JSON.parse('{"fine": 1, "__proto__": 999, "constructor": 5}') as Record<string, unknown>;
    expect(await put(raw, "a", data)).toMatchObject({ code: "PROTOCOL", keys: ["__proto__", "constructor"] });
    const worker = cluster.workers.get("a")!;
    expect([...worker.store.keys()]).toEqual([]);
    expect([...worker.core.tasks.keys()]).toEqual([]);
    expect(await cluster.client().submit<number>("inc", [1]).result({ timeout: 5000 })).toBe(2);
    await raw.close();
  });

  it("a key seeded on a worker before it is computed is neither its result nor an input", async () => {
    const cluster = await start();
    const raw = cluster.bus.connect("raw");
    expect(await put(raw, "a", { seeded: 999 })).toMatchObject({ ok: true });
    expect(await put(raw, "b", { "seeded-input": 999 })).toMatchObject({ ok: true });
    const client = cluster.client();
    // Computed where the seed is: computed, not answered from it.
    expect(await client.submit<number>("inc", [1], { key: "seeded", workers: ["a"] }).result({ timeout: 5000 })).toBe(2);
    // Computed on a, needed on b, where a seed waits under its key: fetched from a.
    const input = client.submit<number>("inc", [1], { key: "seeded-input", workers: ["a"] });
    expect(await client.submit<number>("inc", [input], { workers: ["b"] }).result({ timeout: 5000 })).toBe(3);
    expect(await input.result()).toBe(2);
    await raw.close();
  });
});

describe("natsched's client", () => {
  it("scatters the same value twice, from two clients and to other workers: the data is shared where it is", async () => {
    const cluster = await start();
    const one = cluster.client();
    const two = cluster.client();
    const [first] = await one.scatter([41], { workers: ["a"] });
    const [again] = await one.scatter([41], { workers: ["a"] });
    const [elsewhere] = await two.scatter([41, 7], { workers: ["b"] });
    expect(again!.key).toBe(first!.key);
    expect(elsewhere!.key).toBe(first!.key);
    expect(await Promise.all([first!.result(), again!.result(), elsewhere!.result()])).toEqual([41, 41, 41]);
    expect([...cluster.scheduler.core.tasks.get(first!.key)!.whoHas].map((ws) => ws.name)).toEqual(["a"]);
    // The first client lets go: the second still has it.
    first!.release();
    again!.release();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await two.submit<number>("inc", [elsewhere]).result({ timeout: 5000 })).toBe(42);
  });

  it("a scatter the scheduler confirms leaves no lease behind on its worker", async () => {
    const cluster = await start();
    const client = cluster.client();
    for (let i = 0; i < 20; i++) await client.scatter([`value-${i}`, i], { workers: ["a"] });
    const a = cluster.workers.get("a")!;
    await until("every copy confirmed", () => [...a.core.tasks.values()].every((ts) => ts.scattered === false));
    // White-box: the worker's lease tables (each put-data used to keep its entries and timer until its lease ran out).
    const tables = a as unknown as { leased: Map<string, number>; leases: Map<number, unknown> };
    expect([tables.leased.size, tables.leases.size]).toEqual([0, 0]);
  });

  it("stores a value elsewhere when its content key was seeded on its worker by someone who never registered it", async () => {
    const cluster = await start();
    const raw = cluster.bus.connect("raw");
    const key = `number-${tokenize(5)}`;
    expect(await put(raw, "a", { [key]: 999 })).toMatchObject({ ok: true });
    // Its first round goes to a, which says it has the key; the scheduler does not, so the next round goes to b.
    const [d] = await cluster.client().scatter([5]);
    expect(d!.key).toBe(key);
    expect(await d!.result({ timeout: 5000 })).toBe(5);
    expect([...cluster.scheduler.core.tasks.get(key)!.whoHas].map((ws) => ws.name)).toEqual(["b"]);
    // On a only one worker, it gives up with KeyExistsError (until a's lease frees the seed).
    expect(await put(raw, "a", { [`number-${tokenize(6)}`]: 999 })).toMatchObject({ ok: true });
    const refused = await rejection(cluster.client().scatter([6], { workers: ["a"] }));
    expect(refused).toBeInstanceOf(KeyExistsError);
    expect((refused as KeyExistsError).keys).toEqual([`number-${tokenize(6)}`]);
    await raw.close();
  });

  it("rejects an explicit key that exists with KeyExistsError, and leaves nothing behind", async () => {
    const cluster = await start();
    const client = cluster.client();
    const [d] = await client.scatter([1], { keys: ["d"], workers: ["a"] });
    // d on a worker that does not have it: the scheduler refuses it and frees what was stored.
    const error = await rejection(client.scatter([2, 3], { keys: ["e", "d"], workers: ["a", "b"] }));
    expect(error).toBeInstanceOf(KeyExistsError);
    expect((error as KeyExistsError).keys).toEqual(["d"]);
    // d on the worker that has it: that worker refuses it; e, stored on b, goes too.
    const again = await rejection(client.scatter([4, 5], { keys: ["d", "f"], workers: ["a", "b"] }));
    expect(again).toBeInstanceOf(KeyExistsError);
    expect((again as KeyExistsError).code).toBe("KEY_EXISTS");
    await until("the refused copies to be freed", () => !cluster.workers.get("a")!.store.has("e") && !cluster.workers.get("b")!.store.has("d") && !cluster.workers.get("b")!.store.has("f"));
    expect([...cluster.scheduler.core.tasks.keys()]).toEqual(["d"]);
    expect(cluster.scheduler.core.tasks.get("d")!.whoWants).toEqual(new Set([(client as unknown as { id: string }).id]));
    expect(await d!.result({ timeout: 5000 })).toBe(1);
  });
});

describe("the scatter lease", () => {
  it("frees data nobody registered and confirms data the scheduler counts; the run replays exactly, and what-if sees only data the scheduler took", async () => {
    const log = join(dir, "lease.natlog");
    const cluster = await start({ config: { scatterLease: 0.1 }, log });
    const raw = cluster.bus.connect("raw");
    // A client that died between its put-data and its update-data.
    expect(await put(raw, "a", { orphan: 1 })).toMatchObject({ ok: true });
    const [kept] = await cluster.client().scatter([8], { workers: ["a"] });
    const a = cluster.workers.get("a")!;
    await until("the lease", () => !a.core.tasks.has("orphan") && a.core.tasks.get(kept!.key)?.scattered === false);
    expect(a.store.has("orphan")).toBe(false);
    expect(a.store.get(kept!.key)).toBe(8);
    // Free again for a scatter that registers it.
    const [orphan] = await cluster.client().scatter([1], { keys: ["orphan"], workers: ["a"] });
    expect(await orphan!.result({ timeout: 5000 })).toBe(1);
    // Refused as a whole: neither the new key nor another holder of kept is data of this run.
    const refused = await toScheduler(raw, { op: "update-data", client: "raw", data: [{ key: "sibling", nbytes: 1, workers: ["a"] }, { key: kept!.key, nbytes: 1, workers: ["b"] }] });
    expect(refused).toMatchObject({ ok: false, error: { code: "KEY_EXISTS", keys: [kept!.key] } });
    await raw.close();
    await cluster.close();
    const result = await replay(log);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    const leases = readLogSync(log).records.filter((r) => r.kind === "input" && r.actor === "worker.a" && r.event.op === "scatter-lease");
    expect(leases.length).toBeGreaterThan(0);
    const { scenario } = extractWorkload(readLogSync(log).records);
    expect(scenario.data!.map((d) => [d.key, d.on])).toEqual([
      [kept!.key, ["a"]],
      ["orphan", ["a"]],
    ]);
  });
});
