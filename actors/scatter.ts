/**
 * How a client places data on workers and registers it with the scheduler (Client.scatter;
 * docs/protocol.md, "Scatter"). Scatter creates keys and never overwrites them: a worker
 * refuses a put-data naming a key it already has (KEY_EXISTS, nothing stored), and the
 * scheduler an update-data naming a key it already has, unless that key is in memory on every
 * worker named, when the client just shares it (its want is added).
 */
import { KeyExistsError, NatschedError, ProtocolError } from "../machines/errors.js";
import type { UpdateDataOp } from "../machines/protocol.js";
import type { SchedulerReply } from "../machines/scheduler/inputs.js";
import type { Subjects } from "../transport/subjects.js";
import type { Transport } from "../transport/types.js";
import { putData } from "./data-plane/fetch.js";
import type { PutDataReply } from "./data-plane/wire.js";
import { errorFromInfo } from "./wire-errors.js";

export type DataEntry = UpdateDataOp["data"][number];

/** What a scatter needs of its client. */
export interface ScatterHost {
  readonly transport: Transport;
  readonly subjects: Subjects;
  /** The client's id (put-data's `who`, the source subject of large blobs). */
  readonly id: string;
  readonly requestTimeout: number;
  /** Send update-data to the scheduler. */
  updateData(data: DataEntry[]): Promise<SchedulerReply>;
}

/**
 * Rounds a scatter by content makes before giving up with KeyExistsError: each round looks
 * again at what the scheduler holds (another client may have scattered or released the same
 * value meanwhile) and moves what it must store to the next worker (away from one holding an
 * unregistered copy, which its scatter lease frees in time).
 */
const CONTENT_ROUNDS = 3;

/**
 * Values under keys derived from their content (tokenize): a key the scheduler already holds
 * is shared where it is (nothing moves), the rest are stored on `workerOf(key, round)` and
 * registered. Resolves once the scheduler accepted; rejects with KeyExistsError if it still
 * refused after CONTENT_ROUNDS rounds.
 */
export async function scatterByContent(host: ScatterHost, values: ReadonlyMap<string, unknown>, workerOf: (key: string, round: number) => string): Promise<void> {
  let refused: string[] = [];
  for (let round = 0; round < CONTENT_ROUNDS; round++) {
    const whoHas = await askWhoHas(host, [...values.keys()]);
    const entries: DataEntry[] = [];
    const batches = new Map<string, Map<string, unknown>>();
    for (const [key, value] of values) {
      const holders = whoHas[key];
      if (holders !== undefined && holders.length > 0) {
        entries.push({ key, nbytes: 0, workers: [holders[0]!], existing: true });
        continue;
      }
      const worker = workerOf(key, round);
      let batch = batches.get(worker);
      if (batch === undefined) batches.set(worker, (batch = new Map()));
      batch.set(key, value);
    }
    const { stored, existing } = await putBatches(host, batches, true);
    const reply = await host.updateData([...entries, ...stored, ...existing]);
    if (reply.ok) return;
    if (reply.error.code !== "KEY_EXISTS") throw errorFromInfo(reply.error);
    // Refused as a whole: the scheduler freed the copies this round stored.
    refused = reply.error.keys ?? [];
  }
  throw new KeyExistsError(refused, "scatter");
}

/**
 * Values under keys the caller chose: stored, then registered. A key any worker or the
 * scheduler already has rejects the whole scatter with KeyExistsError, and nothing of it
 * stays: copies stored on other workers are freed by the scheduler's refusal, or, when it
 * accepted them, by the caller releasing its futures (the error it is given back).
 */
export async function scatterExplicit(host: ScatterHost, batches: ReadonlyMap<string, ReadonlyMap<string, unknown>>): Promise<NatschedError | null> {
  const { stored, existing } = await putBatches(host, batches, false);
  const reply = stored.length > 0 ? await host.updateData(stored) : null;
  if (existing.length > 0) return new KeyExistsError(existing.map((e) => e.key), "scatter");
  if (reply !== null && !reply.ok) return errorFromInfo(reply.error);
  return null;
}

/**
 * Each worker's batch by put-data, the batches in parallel. A worker that already has some
 * keys stores nothing and says which (KEY_EXISTS): those come back as `existing` entries (to
 * share what that worker holds; nothing stored), and with `putRest` the rest of its batch
 * goes again (a scatter with explicit keys fails anyway: it stores no more).
 */
async function putBatches(host: ScatterHost, batches: ReadonlyMap<string, ReadonlyMap<string, unknown>>, putRest: boolean): Promise<{ stored: DataEntry[]; existing: DataEntry[] }> {
  const stored: DataEntry[] = [];
  const existing: DataEntry[] = [];
  await Promise.all(
    [...batches].map(async ([worker, batch]) => {
      const rest = new Map(batch);
      while (rest.size > 0) {
        const reply = await putOn(host, worker, Object.fromEntries(rest));
        if (reply.code === "KEY_EXISTS" && Array.isArray(reply.keys)) {
          const before = rest.size;
          for (const key of reply.keys) if (rest.delete(key)) existing.push({ key, nbytes: 0, workers: [worker], existing: true });
          if (rest.size === before) throw new ProtocolError(`scatter to ${worker}: KEY_EXISTS for keys not asked for: ${reply.error ?? ""}`);
          if (!putRest) return;
          continue;
        }
        if (reply.error !== undefined || reply.nbytes === undefined) throw new NatschedError("PROTOCOL", `scatter to ${worker}: ${reply.error ?? "bad reply"}`);
        for (const key of rest.keys()) stored.push({ key, nbytes: reply.nbytes[key] ?? 0, workers: [worker] });
        return;
      }
    }),
  );
  return { stored, existing };
}

async function putOn(host: ScatterHost, worker: string, batch: Record<string, unknown>): Promise<PutDataReply> {
  try {
    return await putData(host.transport, host.subjects.workerData(worker), batch, host.id, {
      timeout: host.requestTimeout,
      sourcePrefix: `${host.subjects.client(host.id)}.data`,
    });
  } catch (error) {
    // The scheduler listed it a moment ago: it left (or died) since.
    if (error instanceof ProtocolError && /no responders/.test(error.message)) {
      throw new NatschedError("NO_WORKERS", `scatter: worker ${JSON.stringify(worker)} does not answer (it left the cluster)`, { cause: error });
    }
    throw error;
  }
}

/** The scheduler's holders of `keys` (its read-only who-has query); none for a key it does not hold. */
async function askWhoHas(host: ScatterHost, keys: string[]): Promise<Record<string, string[] | undefined>> {
  const reply = (await host.transport.request(host.subjects.query, { op: "who-has", keys }, { timeout: host.requestTimeout })) as { whoHas?: unknown } | null;
  const whoHas = reply?.whoHas;
  const out: Record<string, string[] | undefined> = Object.create(null) as Record<string, string[] | undefined>;
  if (typeof whoHas !== "object" || whoHas === null) return out;
  for (const key of keys) {
    const holders = Object.hasOwn(whoHas, key) ? (whoHas as Record<string, unknown>)[key] : undefined;
    if (Array.isArray(holders) && holders.every((h) => typeof h === "string")) out[key] = holders;
  }
  return out;
}
