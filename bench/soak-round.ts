/**
 * One round of the SOAK workload, whatever hosts the cluster: clients connect, each submits a
 * graph (pure keys shared between the clients, keys of its own, tasks that fail, tasks that
 * depend on failed ones, scattered data and tasks on it), waits for every future, releases
 * some keys and submits some again (a failed key again, several times), then leaves, half of
 * them without releasing first. Every future must end with its value or with the
 * TaskFailedError it should; one that does neither within the timeout is counted as hung
 * (and released: the client gives up on it), one that ends otherwise as wrong.
 *
 * Only plain data leaves this module: no future or client outlives the round, so a heap
 * measured after it holds only what the cluster kept.
 */
import { TaskFailedError, type Client, type Future } from "../index.js";

/** How many tasks of each kind one client submits in a round. */
export interface SoakShape {
  clients: number;
  /** Pure `soakInc` tasks submitted by every client of the round (the same keys). */
  sharedOk: number;
  /** Pure `soakFail` tasks submitted by every client of the round (the same keys). */
  sharedFail: number;
  /** Non-pure `soakInc` tasks of one client. */
  ownOk: number;
  /** Non-pure `soakFail` tasks of one client. */
  ownFail: number;
  /** `add` of two of its own ok results. */
  onOk: number;
  /** `add` of a failing task and an ok one, and as many `add` on those (a chain two deep). */
  onFail: number;
  /** Values scattered by the client, each with an `add` task on it. */
  scattered: number;
  /** Times a client submits its own pure failing key again after releasing it. */
  failAgain: number;
}

/** About 3,000 tasks a round, about 300 of them failing on a worker (as the issue measured). */
export const FULL_SHAPE: SoakShape = { clients: 6, sharedOk: 100, sharedFail: 10, ownOk: 400, ownFail: 45, onOk: 40, onFail: 5, scattered: 4, failAgain: 3 };
/** A few dozen tasks a client: the correctness test and `--quick`. */
export const SMALL_SHAPE: SoakShape = { clients: 4, sharedOk: 8, sharedFail: 3, ownOk: 20, ownFail: 4, onOk: 4, onFail: 2, scattered: 2, failAgain: 3 };

/** What the round needs from the cluster's host. */
export interface SoakHost {
  /** A new client, connected. */
  client(): Promise<Client>;
}

type Expect = { value: unknown } | { failedKey: string };

interface Tracked {
  future: Future;
  expect: Expect;
  what: string;
}

export interface RoundOutcome {
  /** Futures waited for (phase A and B). */
  futures: number;
  /** Futures that ended with the value they should. */
  ok: number;
  /** Futures that failed with the TaskFailedError they should (the failing key named). */
  failed: number;
  /** Futures that neither resolved nor failed within the timeout. */
  hung: number;
  /** Futures that ended otherwise: a wrong value, an unexpected error, a failure naming the wrong key. */
  wrong: number;
  /** Tasks submitted (with repeats; shared keys counted once per client). */
  submitted: number;
  /** A few of each problem: `<what> <key>: <detail>`. */
  samples: { hung: string[]; wrong: string[] };
  /** Clients that could not connect or broke off with an error (the error's text). */
  clientErrors: string[];
  seconds: number;
}

const SAMPLES = 5;

/** Runs round `round`: every client of it concurrently; resolves once all have left. */
export async function runRound(host: SoakHost, round: number, shape: SoakShape, timeoutMs: number): Promise<RoundOutcome> {
  const t0 = performance.now();
  const out: RoundOutcome = { futures: 0, ok: 0, failed: 0, hung: 0, wrong: 0, submitted: 0, samples: { hung: [], wrong: [] }, clientErrors: [], seconds: 0 };
  await Promise.all(
    Array.from({ length: shape.clients }, async (_, c) => {
      try {
        await clientSession(host, round, c, shape, timeoutMs, out);
      } catch (error) {
        out.clientErrors.push(`client ${c}: ${String((error as Error)?.stack ?? error).split("\n").slice(0, 3).join(" | ")}`);
      }
    }),
  );
  out.seconds = Number(((performance.now() - t0) / 1000).toFixed(2));
  return out;
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
const inc = (x: number): number => x + 1;

async function clientSession(host: SoakHost, r: number, c: number, shape: SoakShape, timeoutMs: number, out: RoundOutcome): Promise<void> {
  const client = await host.client();
  try {
    const tracked: Tracked[] = [];
    const track = (future: Future, expect: Expect, what: string): Future => {
      tracked.push({ future, expect, what });
      out.submitted++;
      return future;
    };
    const fails = (future: Future, what: string): Future => track(future, { failedKey: future.key }, what);
    // Values differ per round (and per client where the keys are its own): no key repeats across rounds.
    const base = (r + 1) * 1_000_000;

    // ---- phase A: the graph ----
    const sharedOk = client.map("soakInc", range(shape.sharedOk).map((j) => base + j)).map((f, j) => track(f, { value: inc(base + j) }, "shared-ok"));
    const sharedFail = client.map("soakFail", range(shape.sharedFail).map((j) => `r${r}-shared-${j}`)).map((f) => fails(f, "shared-fail"));
    // A pure task on a shared failing one and a shared ok one: the same key in every client.
    sharedFail.slice(0, 2).forEach((f, j) => track(client.submit("add", [f, sharedOk[j]!]), { failedKey: f.key }, "shared-on-fail"));
    const ownOk = client.map("soakInc", range(shape.ownOk).map((j) => base + 1000 * c + j), { pure: false }).map((f, j) => track(f, { value: inc(base + 1000 * c + j) }, "own-ok"));
    const ownFail = client.map("soakFail", range(shape.ownFail).map((j) => `r${r}-c${c}-${j}`), { pure: false }).map((f) => fails(f, "own-fail"));
    const ownPureFail = fails(client.submit("soakFail", [`r${r}-c${c}-again`]), "own-pure-fail");
    for (let j = 0; j < shape.onOk && 2 * j + 1 < ownOk.length; j++) {
      track(client.submit("add", [ownOk[2 * j]!, ownOk[2 * j + 1]!], { pure: false }), { value: inc(base + 1000 * c + 2 * j) + inc(base + 1000 * c + 2 * j + 1) }, "on-ok");
    }
    for (let j = 0; j < shape.onFail && j < ownFail.length; j++) {
      const onFail = track(client.submit("add", [ownFail[j]!, ownOk[j]!], { pure: false }), { failedKey: ownFail[j]!.key }, "on-fail");
      track(client.submit("add", [onFail, 1], { pure: false }), { failedKey: ownFail[j]!.key }, "on-on-fail");
    }
    // Scattered values unique to this client and round (scatter names a value by its content).
    const values = range(shape.scattered).map((j) => base + 1000 * c + 500 + j + 0.5);
    const scattered = await client.scatter(values);
    scattered.forEach((f, j) => track(f, { value: values[j] }, "scattered"));
    scattered.forEach((f, j) => track(client.submit("add", [f, 1], { pure: false }), { value: values[j]! + 1 }, "on-scattered"));
    await settle(client, tracked, timeoutMs, out);

    // ---- phase B: release some, submit some again ----
    const again: Tracked[] = [];
    const releaseEven = (fs: Future[]): void => fs.forEach((f, j) => j % 2 === 0 && f.release());
    releaseEven(sharedOk);
    releaseEven(ownOk);
    releaseEven(ownFail);
    sharedFail.forEach((f) => f.release());
    scattered[0]?.release();
    // Let the release go out (the client sends it at the end of the turn) before submitting the same keys.
    await new Promise((resolve) => setImmediate(resolve));
    const trackAgain = (future: Future, expect: Expect, what: string): Future => {
      again.push({ future, expect, what });
      out.submitted++;
      return future;
    };
    const evenShared = range(shape.sharedOk).filter((j) => j % 2 === 0);
    client.map("soakInc", evenShared.map((j) => base + j)).forEach((f, i) => trackAgain(f, { value: inc(base + evenShared[i]!) }, "shared-ok-again"));
    client.map("soakFail", range(shape.sharedFail).map((j) => `r${r}-shared-${j}`)).forEach((f) => trackAgain(f, { failedKey: f.key }, "shared-fail-again"));
    // The client's own failing key: released, then submitted again, `failAgain` times (while
    // it keeps failing as it should), alongside the shared keys submitted again above.
    let last = ownPureFail;
    const ownAgain = async (): Promise<void> => {
      for (let k = 0; k < shape.failAgain; k++) {
        last.release();
        await new Promise((resolve) => setImmediate(resolve));
        const next = client.submit("soakFail", [`r${r}-c${c}-again`]);
        const dependent = client.submit("add", [next, 1], { pure: false });
        const step: Tracked[] = [
          { future: next, expect: { failedKey: next.key }, what: `own-pure-fail-again-${k + 1}` },
          { future: dependent, expect: { failedKey: next.key }, what: `on-own-pure-fail-again-${k + 1}` },
        ];
        out.submitted += 2;
        const problems = await settle(client, step, timeoutMs, out);
        dependent.release();
        last = next;
        // A hang costs a timeout; another of the same key would only cost another.
        if (problems > 0) break;
      }
    };
    await Promise.all([settle(client, again, timeoutMs, out), ownAgain()]);

    // ---- phase C: leave, half of the clients releasing everything first ----
    if (c % 2 === 0) {
      for (const t of [...tracked, ...again]) t.future.release();
      last.release();
    }
  } finally {
    await client.close();
  }
}

/** Waits for every future (at most `timeoutMs` in all), then checks what each ended with; returns how many hung or ended wrong. */
async function settle(client: Client, tracked: readonly Tracked[], timeoutMs: number, out: RoundOutcome): Promise<number> {
  let problems = 0;
  const deadline = Date.now() + timeoutMs;
  await Promise.all(tracked.map((t) => t.future.wait({ timeout: timeoutMs })));
  const finished = tracked.filter((t) => t.future.status === "finished");
  let values: unknown[] | null = null;
  if (finished.length > 0) {
    try {
      values = await client.gather(
        finished.map((t) => t.future),
        { timeout: Math.max(1, deadline - Date.now()) },
      );
    } catch {
      values = null; // judged one by one below
    }
  }
  for (const t of tracked) {
    out.futures++;
    const status = t.future.status;
    if (status === "pending") {
      problems++;
      out.hung++;
      note(out.samples.hung, `${t.what} ${t.future.key}: neither resolved nor failed in ${timeoutMs} ms`);
      continue;
    }
    let outcome: { value: unknown } | { error: unknown };
    if (status === "finished" && values !== null) outcome = { value: values[finished.indexOf(t)] };
    else {
      try {
        outcome = { value: await t.future.result({ timeout: Math.max(1, deadline - Date.now()) }) };
      } catch (error) {
        outcome = { error };
      }
    }
    const problem = judge(t.expect, outcome);
    if (problem === null) {
      if ("value" in t.expect) out.ok++;
      else out.failed++;
    } else if ("error" in outcome && (outcome.error as { code?: string })?.code === "TIMEOUT") {
      problems++;
      out.hung++;
      note(out.samples.hung, `${t.what} ${t.future.key}: ${problem}`);
    } else {
      problems++;
      out.wrong++;
      note(out.samples.wrong, `${t.what} ${t.future.key}: ${problem}`);
    }
  }
  return problems;
}

/** null when the outcome is what was expected, else what is wrong with it. */
function judge(expect: Expect, outcome: { value: unknown } | { error: unknown }): string | null {
  if ("value" in expect) {
    if ("error" in outcome) return `expected ${String(expect.value)}, got ${describeError(outcome.error)}`;
    return outcome.value === expect.value ? null : `expected ${String(expect.value)}, got ${JSON.stringify(outcome.value)}`;
  }
  if ("value" in outcome) return `expected TaskFailedError (${expect.failedKey}), got the value ${JSON.stringify(outcome.value)}`;
  const error = outcome.error;
  if (!(error instanceof TaskFailedError)) return `expected TaskFailedError (${expect.failedKey}), got ${describeError(error)}`;
  if (error.failedKey !== expect.failedKey) return `failed naming ${error.failedKey}, expected ${expect.failedKey}`;
  return null;
}

function describeError(error: unknown): string {
  const e = error as { name?: string; code?: string; message?: string };
  return `${e?.name ?? "Error"}${e?.code ? ` (${e.code})` : ""}: ${e?.message ?? String(error)}`;
}

function note(list: string[], text: string): void {
  if (list.length < SAMPLES) list.push(text);
}
