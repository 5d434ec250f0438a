/**
 * Random cases for deterministic simulation testing: a scenario (cluster, graph, actions,
 * network faults) and when to check a scheduler restart, all drawn by fast-check from one
 * seed. Everything a case does is in its JSON: a saved case replays the same run.
 */
import fc from "fast-check";
import type { Config } from "../machines/config.js";
import type { NetworkFaultSpec, Scenario, SimAction, SimDataSpec, SimTaskSpec, SimWorkerSpec } from "../sim.js";

export interface DstCase {
  scenario: Scenario;
  /**
   * At the first step at or after this virtual time, a scheduler is rebuilt from its
   * recorded inputs and must equal the live one (a restart that recovers from the log).
   */
  restartAt?: number;
}

/**
 * Which network faults cases may have (sim/faults.ts):
 * - none;
 * - fifo: delays that keep each sender's order (the in-process bus, and NATS between
 *   reconnects);
 * - reorder: also late envelopes overtaken by newer ones from the same sender (NATS
 *   re-publishing its window after a reconnect);
 * - duplicate: also envelopes delivered twice (NATS only past its de-duplication window).
 */
export type FaultProfile = "none" | "fifo" | "reorder" | "duplicate";
export const FAULT_PROFILES: readonly FaultProfile[] = ["none", "fifo", "reorder", "duplicate"];

export interface CaseOptions {
  faults: FaultProfile;
  /** Upper bound on the number of tasks drawn per graph part. */
  maxTasks: number;
}

export const DEFAULT_CASE_OPTIONS: CaseOptions = { faults: "fifo", maxTasks: 40 };

export const WORKER_NAMES = ["w0", "w1", "w2", "w3", "w4"];

/** null with probability nilWeight / (nilWeight + 1), else a value of `arb`; shrinks to null. */
const sometimes = <T>(arb: fc.Arbitrary<T>, nilWeight: number): fc.Arbitrary<T | null> =>
  fc.oneof({ withCrossShrink: true }, { arbitrary: fc.constant(null), weight: nilWeight }, { arbitrary: arb, weight: 1 });

/** True with probability 1/n; shrinks to false. */
const oneIn = (n: number): fc.Arbitrary<boolean> => fc.integer({ min: 0, max: n - 1 }).map((i) => i === n - 1);

interface TaskDraw {
  duration: number;
  nbytes: number;
  /** The task fails if this is at least 100 minus the case's failure percentage (shrinks to not failing). */
  failRoll: number;
  restriction: { kind: "worker" | "gpu" | "host"; pick: number; strict: boolean } | null;
  priority: number | null;
  /** Its retries; `flaky`: a failing task fails only as many times as it has retries, so it ends in memory. */
  retry: { retries: number; flaky: boolean } | null;
}

const taskDraw: fc.Arbitrary<TaskDraw> = fc.record({
  duration: fc.constantFrom(0, 0.001, 0.1, 0.5, 1, 3),
  nbytes: fc.constantFrom(8, 1000, 1e6, 5e7),
  failRoll: fc.nat(99),
  restriction: sometimes(fc.record({ kind: fc.constantFrom<"worker" | "gpu" | "host">("worker", "gpu", "host"), pick: fc.nat(), strict: oneIn(3) }), 2),
  priority: sometimes(fc.integer({ min: -2, max: 2 }), 3),
  retry: sometimes(fc.record({ retries: fc.integer({ min: 0, max: 2 }), flaky: fc.boolean() }), 3),
});

/** Graph shapes: deps are picked among earlier keys, so every draw is a DAG. */
type ShapeDraw =
  | { kind: "random"; tasks: { t: TaskDraw; deps: number[]; submitAt: number }[] }
  | { kind: "layered"; layers: { t: TaskDraw; deps: number[] }[][] }
  | { kind: "reduction"; leaves: TaskDraw[]; arity: number; node: TaskDraw }
  | { kind: "fanout"; root: TaskDraw; children: TaskDraw[]; sink: TaskDraw | null }
  | { kind: "pile"; on: number; tasks: { duration: number; deps: number[] }[] };

function shapeDraw(maxTasks: number): fc.Arbitrary<ShapeDraw> {
  // Beyond the default 40 tasks, lists are drawn longer too (fast-check keeps them short otherwise).
  const size: fc.SizeForArbitrary | undefined = maxTasks > 40 ? "medium" : undefined;
  const cap = (small: number): number => Math.max(1, Math.min(maxTasks, Math.max(small, Math.floor(maxTasks / 2))));
  const width = Math.max(1, Math.min(maxTasks, Math.max(8, Math.floor(maxTasks / 5))));
  return fc.oneof(
    fc.record({
      kind: fc.constant("random" as const),
      tasks: fc.array(fc.record({ t: taskDraw, deps: fc.array(fc.nat(), { maxLength: 3 }), submitAt: fc.constantFrom(0, 0, 0, 1, 2.5) }), {
        minLength: 1,
        maxLength: maxTasks,
        size,
      }),
    }),
    fc.record({
      kind: fc.constant("layered" as const),
      layers: fc.array(fc.array(fc.record({ t: taskDraw, deps: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }) }), { minLength: 1, maxLength: width, size }), {
        minLength: 1,
        maxLength: Math.max(1, Math.min(5, Math.floor(maxTasks / 2))),
      }),
    }),
    fc.record({
      kind: fc.constant("reduction" as const),
      leaves: fc.array(taskDraw, { minLength: 2, maxLength: Math.max(2, cap(16)), size }),
      arity: fc.integer({ min: 2, max: 3 }),
      node: taskDraw,
    }),
    // Work piled on one worker (a preference, not a rule): what stealing is for.
    fc.record({
      kind: fc.constant("pile" as const),
      on: fc.nat(),
      tasks: fc.array(fc.record({ duration: fc.constantFrom(0.1, 0.5, 1, 3), deps: fc.array(fc.nat(), { maxLength: 2 }) }), {
        minLength: 2,
        maxLength: Math.max(2, cap(30)),
        size,
      }),
    }),
    fc.record({
      kind: fc.constant("fanout" as const),
      root: taskDraw,
      children: fc.array(taskDraw, { minLength: 1, maxLength: cap(20), size }),
      sink: fc.option(taskDraw, { freq: 2 }),
    }),
  );
}

interface WorkerDraw {
  nthreads: number;
  host: string;
  gpu: boolean;
  joinAt: number;
  delay: number;
}

const workerDraw: fc.Arbitrary<WorkerDraw> = fc.record({
  nthreads: fc.integer({ min: 1, max: 4 }),
  host: fc.constantFrom("h0", "h1"),
  gpu: oneIn(3),
  joinAt: fc.constantFrom(0, 0, 0, 0, 0.5, 2),
  // A slow worker's messages wait in its host: its round trip is longer (adaptive saturation gives it more).
  delay: fc.constantFrom(0, 0, 0, 0.002),
});

interface KillDraw {
  at: number;
  worker: number;
  /** Seconds until a new incarnation joins, or null: it stays dead. */
  back: number | null;
}

const killDraw: fc.Arbitrary<KillDraw> = fc.record({
  at: fc.constantFrom(0.05, 0.3, 1, 1.7, 4),
  worker: fc.nat(),
  back: fc.option(fc.constantFrom(0, 0.01, 1), { freq: 2 }),
});

/**
 * A worker leaving other than by dying: retired (waiting for close-worker, closing at once
 * after asking, or after half a second), or lost by the scheduler while it lives on and
 * registering again `back` seconds later.
 */
interface LeaveDraw {
  at: number;
  worker: number;
  kind: "retire" | "retire-close" | "retire-timeout" | "lose";
  back: number;
}

const leaveDraw: fc.Arbitrary<LeaveDraw> = fc.record({
  at: fc.constantFrom(0, 0.05, 0.3, 1, 1.7, 4),
  worker: fc.nat(),
  kind: fc.constantFrom<LeaveDraw["kind"]>("retire", "retire-close", "retire-timeout", "lose", "lose"),
  back: fc.constantFrom(0, 0.2, 1, 3),
});

/** A client scattering the scenario's data again (shared where it is, or stored on a worker if lost). */
interface ScatterDraw {
  at: number;
  client: number;
  picks: number[];
  on: number;
}

const scatterDraw: fc.Arbitrary<ScatterDraw> = fc.record({
  at: fc.constantFrom(0, 0.05, 0.5, 2, 4),
  client: fc.integer({ min: 0, max: 2 }),
  picks: fc.array(fc.nat(), { minLength: 1, maxLength: 2 }),
  on: fc.nat(),
});

function faultsDraw(profile: FaultProfile): fc.Arbitrary<NetworkFaultSpec | null> {
  if (profile === "none") return fc.constant(null);
  const spec = fc.record({
    delay: fc.constantFrom(0.1, 0.3, 0.7),
    reorder: profile === "fifo" ? fc.constant(0) : fc.constantFrom(0.05, 0.2),
    duplicate: profile === "duplicate" ? fc.constantFrom(0.05, 0.2) : fc.constant(0),
    maxDelay: fc.constantFrom(0.005, 0.05, 0.5),
  });
  return fc.option(spec, { freq: 3 });
}

/**
 * What a client does at `at`: submit tasks (again, or as another client: shared keys),
 * release them, release them and submit them again `gap` seconds later, cancel them (and
 * what depends on them), cancel them and submit them again `gap` seconds later, fire and forget
 * them and release them at once, or leave. Keys are
 * picked among the case's tasks, among the failing ones if `failing` and there are any.
 */
interface ClientStepDraw {
  at: number;
  /** 0: sim-client (the client of the case's graphs), else c1, c2. */
  client: number;
  kind: "submit" | "release" | "resubmit" | "cancel" | "cancel-resubmit" | "fire-and-forget" | "leave";
  picks: number[];
  failing: boolean;
  gap: number;
}

const clientStepDraw: fc.Arbitrary<ClientStepDraw> = fc.record({
  at: fc.constantFrom(0, 0.05, 0.5, 1, 2, 4, 8),
  client: fc.integer({ min: 0, max: 2 }),
  kind: fc.constantFrom<ClientStepDraw["kind"]>("submit", "release", "resubmit", "resubmit", "cancel", "cancel-resubmit", "fire-and-forget", "leave"),
  picks: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
  failing: fc.boolean(),
  gap: fc.constantFrom(0, 0.01, 0.5, 2),
});

interface CaseDraw {
  seed: number;
  workers: WorkerDraw[];
  shape: ShapeDraw;
  data: { nbytes: number; on: number[] }[];
  kills: KillDraw[];
  balances: number[];
  /** Percentage of tasks that fail. */
  failPercent: number;
  /**
   * Whether a failing task may be flaky (fail as many times as it has retries, then succeed).
   * Not with messages reordered: a compute-task overtaking the free-keys of a failure the
   * worker keeps is answered with that failure, which uses up a retry without a run.
   */
  flakyAllowed: boolean;
  clients: ClientStepDraw[] | null;
  leaves: LeaveDraw[] | null;
  scatters: ScatterDraw[] | null;
  stealing: boolean;
  workerSaturation: number | "inf" | "adaptive";
  allowedFailures: number;
  latency: number;
  bandwidth: number;
  faults: NetworkFaultSpec | null;
  restartAt: number | null;
  /** A clean scheduler stop at `at`, and a new run `gap` seconds later. */
  newRun: { at: number; gap: number } | null;
}

export function dstCaseArb(options: CaseOptions = DEFAULT_CASE_OPTIONS): fc.Arbitrary<DstCase> {
  const draw: fc.Arbitrary<CaseDraw> = fc.record({
    seed: fc.nat(),
    workers: fc.array(workerDraw, { minLength: 1, maxLength: WORKER_NAMES.length }),
    shape: shapeDraw(options.maxTasks),
    data: fc.array(fc.record({ nbytes: fc.constantFrom(8, 1e6, 5e7), on: fc.uniqueArray(fc.nat({ max: WORKER_NAMES.length - 1 }), { minLength: 1, maxLength: 2 }) }), {
      maxLength: 2,
    }),
    kills: fc.array(killDraw, { maxLength: 3 }),
    balances: fc.array(fc.constantFrom(0.2, 1, 2.5), { maxLength: 2 }),
    failPercent: fc.constantFrom(5, 5, 25),
    flakyAllowed: fc.constant(options.faults === "none" || options.faults === "fifo"),
    clients: sometimes(fc.array(clientStepDraw, { minLength: 1, maxLength: 6 }), 1),
    leaves: sometimes(fc.array(leaveDraw, { minLength: 1, maxLength: 2 }), 2),
    scatters: sometimes(fc.array(scatterDraw, { minLength: 1, maxLength: 2 }), 3),
    stealing: fc.boolean(),
    workerSaturation: fc.constantFrom<number | "inf" | "adaptive">(1, 1.1, 2, "inf", "adaptive"),
    allowedFailures: fc.constantFrom(100, 100, 100, 1, 0),
    latency: fc.constantFrom(0, 0.001, 0.01, 0.05),
    bandwidth: fc.constantFrom(1e6, 1e8, 1e9),
    faults: faultsDraw(options.faults),
    restartAt: fc.option(fc.constantFrom(0.1, 0.5, 1.3, 3, 8), { freq: 2 }),
    newRun: sometimes(fc.record({ at: fc.constantFrom(0.05, 0.4, 1.1, 2.2, 4.5), gap: fc.constantFrom(0, 0.02, 0.6) }), 4),
  });
  return draw.map(buildCase);
}

function buildCase(d: CaseDraw): DstCase {
  const workers: SimWorkerSpec[] = d.workers.map((w, i) => ({
    name: WORKER_NAMES[i]!,
    nthreads: w.nthreads,
    host: w.host,
    ...(w.gpu ? { resources: { GPU: 1 } } : {}),
    ...(w.joinAt > 0 ? { joinAt: w.joinAt } : {}),
    ...(w.delay > 0 ? { delay: w.delay } : {}),
    // Workers on host h1 hold their reports as workers on NATS do (config reportHold): taken
    // from a draw already made, so a seed draws the same cases as before they could.
    ...(w.host === "h1" ? { reportHold: 0.05 } : {}),
  }));
  const atStart = new Set(workers.filter((w) => (w.joinAt ?? 0) === 0).map((w) => w.name));
  const data: SimDataSpec[] = [];
  d.data.forEach((datum, i) => {
    const on = [...new Set(datum.on.map((p) => WORKER_NAMES[p % workers.length]!))].filter((w) => atStart.has(w));
    if (on.length > 0) data.push({ key: `data-${i}`, nbytes: datum.nbytes, on });
  });
  const tasks = buildTasks(d.shape, data, workers.length, d.failPercent, d.flakyAllowed);
  const scenario: Scenario = {
    seed: d.seed,
    config: {
      workStealing: d.stealing,
      workerSaturation: d.workerSaturation as Config["workerSaturation"],
      allowedFailures: d.allowedFailures,
    },
    network: { latency: d.latency, bandwidth: d.bandwidth },
    workers,
    tasks,
    ...(data.length > 0 ? { data } : {}),
  };
  const actions = [...buildActions(d, workers), ...buildClientActions(d.clients ?? [], tasks, data.length > 0), ...buildScatters(d.scatters ?? [], data, workers)].sort(
    (a, b) => a.at - b.at,
  );
  // The scheduler restarts from its log at restartAt, for real: the rest of the run is the rebuilt one's.
  if (d.restartAt !== null) actions.push({ at: d.restartAt, do: "restart-scheduler" });
  // A clean stop and a new run, unless something else would happen while the scheduler is down,
  // or a graph submitted after it needs the scattered data (which the new run does not know).
  if (d.newRun !== null) {
    const from = d.newRun.at;
    const to = from + d.newRun.gap;
    const within = (at: number): boolean => at >= from && at <= to;
    const busy = actions.some((a) => within(a.at)) || tasks.some((t) => within(t.submitAt ?? 0)) || workers.some((w) => within(w.joinAt ?? 0));
    const needsData = needingData(tasks, data);
    const lateData = tasks.some((t) => (t.submitAt ?? 0) > to && needsData.has(t.key));
    if (!busy && !lateData) {
      actions.push({ at: from, do: "stop-scheduler" }, { at: to, do: "start-scheduler" });
      // Submit actions after it of keys that need the data would be refused: left out.
      const kept = actions.filter((a) => !(a.do === "submit" && a.at > to && a.keys.some((k) => needsData.has(k))));
      actions.length = 0;
      actions.push(...kept);
    }
  }
  if (actions.length > 0) scenario.actions = actions;
  if (d.faults !== null) scenario.faults = d.faults;
  return d.restartAt === null ? { scenario } : { scenario, restartAt: d.restartAt };
}

function buildTasks(shape: ShapeDraw, data: SimDataSpec[], nWorkers: number, failPercent: number, flakyAllowed: boolean): SimTaskSpec[] {
  const specs: SimTaskSpec[] = [];
  const add = (key: string, t: TaskDraw, deps: string[], submitAt = 0): void => {
    const spec: SimTaskSpec = { key, duration: t.duration, nbytes: t.nbytes };
    const unique = [...new Set(deps)];
    if (unique.length > 0) spec.deps = unique;
    if (submitAt > 0) spec.submitAt = submitAt;
    if (t.failRoll >= 100 - failPercent) spec.error = "boom";
    if (t.retry !== null && t.retry.retries > 0) {
      spec.retries = t.retry.retries;
      if (spec.error !== undefined && t.retry.flaky && flakyAllowed) spec.failures = t.retry.retries;
    }
    if (t.priority !== null) spec.priority = t.priority;
    const r = t.restriction;
    if (r !== null) {
      // One past the cluster's names: a worker that never exists.
      if (r.kind === "worker") spec.workers = [WORKER_NAMES[r.pick % (nWorkers + 1)] ?? "nowhere"];
      else if (r.kind === "gpu") spec.resources = { GPU: 1 };
      else spec.hosts = [r.pick % 2 === 0 ? "h0" : "h1"];
      spec.allowOtherWorkers = !r.strict;
    }
    specs.push(spec);
  };
  switch (shape.kind) {
    case "random":
      shape.tasks.forEach(({ t, deps, submitAt }, i) => {
        const candidates = [...data.map((x) => x.key), ...specs.filter((s) => (s.submitAt ?? 0) <= submitAt).map((s) => s.key)];
        add(
          `inc-${i}`,
          t,
          candidates.length === 0 ? [] : deps.map((p) => candidates[p % candidates.length]!),
          submitAt,
        );
      });
      break;
    case "layered": {
      let previous: string[] = data.map((x) => x.key);
      shape.layers.forEach((layer, l) => {
        const keys: string[] = [];
        layer.forEach(({ t, deps }, i) => {
          const key = `${l === 0 ? "load" : "map"}-${l}-${i}`;
          add(key, t, previous.length === 0 ? [] : deps.map((p) => previous[p % previous.length]!));
          keys.push(key);
        });
        previous = keys;
      });
      break;
    }
    case "reduction": {
      let level = shape.leaves.map((t, i) => {
        add(`leaf-${i}`, t, []);
        return `leaf-${i}`;
      });
      let depth = 0;
      while (level.length > 1) {
        const next: string[] = [];
        for (let i = 0; i < level.length; i += shape.arity) {
          const key = `sum-${depth}-${i / shape.arity}`;
          add(key, shape.node, level.slice(i, i + shape.arity));
          next.push(key);
        }
        level = next;
        depth += 1;
      }
      break;
    }
    case "pile": {
      const on = WORKER_NAMES[shape.on % nWorkers]!;
      shape.tasks.forEach(({ duration, deps }, i) => {
        const earlier = specs.map((s) => s.key);
        const spec: SimTaskSpec = { key: `pile-${i}`, duration, nbytes: 1000, workers: [on], allowOtherWorkers: true };
        const picked = earlier.length === 0 ? [] : [...new Set(deps.map((p) => earlier[p % earlier.length]!))];
        if (picked.length > 0) spec.deps = picked;
        specs.push(spec);
      });
      break;
    }
    case "fanout":
      add("root-0", shape.root, data.length > 0 ? [data[0]!.key] : []);
      shape.children.forEach((t, i) => add(`child-${i}`, t, ["root-0"]));
      if (shape.sink !== null) add("total-0", shape.sink, shape.children.map((_, i) => `child-${i}`));
      break;
  }
  return specs;
}

/**
 * Kills (and comebacks), retirements and losses that are valid in time order (a worker is
 * killed, retired or lost only while alive and not lost; a retired name is not used again),
 * then balance passes.
 */
function buildActions(d: CaseDraw, workers: SimWorkerSpec[]): SimAction[] {
  const actions: SimAction[] = [];
  const aliveFrom = new Map(workers.map((w) => [w.name, w.joinAt ?? 0] as const));
  /** When each lost worker registers again. */
  const lostUntil = new Map<string, number>();
  type Step = { at: number; worker: number } & ({ kind: "kill"; back: number | null } | LeaveDraw);
  const steps: Step[] = [...d.kills.map((k): Step => ({ ...k, kind: "kill" })), ...(d.leaves ?? [])];
  steps.sort((a, b) => a.at - b.at);
  let kills = 0;
  for (const step of steps) {
    const spec = workers[step.worker % workers.length]!;
    const from = aliveFrom.get(spec.name);
    if (from === undefined || from > step.at) continue;
    if (step.kind === "kill") {
      // Some deaths the scheduler is told of at once, as LocalCluster.killWorker tells it (a
      // lose-worker just before the kill); the others it finds by its liveness check, as it
      // finds a worker process that died. Which ones: bits of the case's seed, so that the
      // drawn cases stay what they were.
      if ((lostUntil.get(spec.name) ?? -1) <= step.at && ((d.seed >>> kills++) & 1) === 1) actions.push({ at: step.at, do: "lose-worker", worker: spec.name, back: 0 });
      aliveFrom.delete(spec.name);
      lostUntil.delete(spec.name);
      actions.push({ at: step.at, do: "kill-worker", worker: spec.name });
      if (step.back !== null) {
        const { joinAt: _joinAt, ...again } = spec;
        actions.push({ at: step.at + step.back, do: "add-worker", worker: again });
        aliveFrom.set(spec.name, step.at + step.back);
      }
      continue;
    }
    if ((lostUntil.get(spec.name) ?? -1) > step.at) continue;
    if (step.kind === "lose") {
      actions.push({ at: step.at, do: "lose-worker", worker: spec.name, back: step.back });
      lostUntil.set(spec.name, step.at + step.back);
      continue;
    }
    aliveFrom.delete(spec.name);
    const timeout = step.kind === "retire-close" ? { timeout: 0 } : step.kind === "retire-timeout" ? { timeout: 0.5 } : {};
    actions.push({ at: step.at, do: "retire-worker", worker: spec.name, ...timeout });
  }
  if (d.stealing) for (const at of d.balances) actions.push({ at, do: "balance" });
  return actions;
}

/** Clients scattering the case's data again: a key picked among the data, put on a worker of the case if it must be stored. */
function buildScatters(steps: ScatterDraw[], data: SimDataSpec[], workers: SimWorkerSpec[]): SimAction[] {
  if (data.length === 0) return [];
  return steps.map((step) => ({
    at: step.at,
    do: "scatter" as const,
    ...(step.client === 0 ? {} : { client: `c${step.client}` }),
    keys: [...new Set(step.picks.map((p) => data[p % data.length]!.key))],
    on: [workers[step.on % workers.length]!.name, ...workers.map((w) => w.name)].filter((n, i, all) => all.indexOf(n) === i),
  }));
}

/** What the clients do: submit, release, release and submit again, cancel, cancel and submit again, fire and forget, leave. */
function buildClientActions(steps: ClientStepDraw[], tasks: SimTaskSpec[], hasData: boolean): SimAction[] {
  const actions: SimAction[] = [];
  if (tasks.length === 0) return actions;
  const keys = tasks.map((t) => t.key);
  const failing = tasks.filter((t) => t.error !== undefined).map((t) => t.key);
  for (const step of steps) {
    const who = step.client === 0 ? {} : { client: `c${step.client}` };
    const pool = step.failing && failing.length > 0 ? failing : keys;
    const picked = [...new Set(step.picks.map((p) => pool[p % pool.length]!))];
    switch (step.kind) {
      case "submit":
        actions.push({ at: step.at, do: "submit", ...who, keys: picked });
        break;
      case "release":
        actions.push({ at: step.at, do: "release", ...who, keys: picked });
        break;
      case "resubmit":
        actions.push({ at: step.at, do: "release", ...who, keys: picked });
        actions.push({ at: step.at + step.gap, do: "submit", ...who, keys: picked });
        break;
      case "cancel":
        actions.push({ at: step.at, do: "cancel", ...who, keys: picked });
        break;
      case "cancel-resubmit":
        actions.push({ at: step.at, do: "cancel", ...who, keys: picked });
        actions.push({ at: step.at + step.gap, do: "submit", ...who, keys: picked });
        break;
      case "fire-and-forget":
        actions.push({ at: step.at, do: "fire-and-forget", ...who, keys: picked });
        actions.push({ at: step.at, do: "release", ...who, keys: picked });
        break;
      case "leave":
        // The scenario's data stays with sim-client for the whole run.
        if (step.client !== 0 || !hasData) actions.push({ at: step.at, do: "client-leave", ...who });
        break;
    }
  }
  return actions;
}

/** Tasks that need scattered data, directly or through other tasks. */
function needingData(tasks: SimTaskSpec[], data: SimDataSpec[]): Set<string> {
  const out = new Set(data.map((d) => d.key));
  // Tasks come after their dependencies (buildTasks draws dependencies among earlier keys).
  for (const t of tasks) if ((t.deps ?? []).some((dep) => out.has(dep))) out.add(t.key);
  for (const d of data) out.delete(d.key);
  return out;
}

/** Workers alive when the run ends (after every kill and comeback). */
export function survivors(scenario: Scenario): SimWorkerSpec[] {
  const alive = new Map(scenario.workers.map((w) => [w.name, w] as const));
  const ordered = (scenario.actions ?? []).map((a, i) => ({ a, i })).sort((x, y) => x.a.at - y.a.at || x.i - y.i);
  for (const { a } of ordered) {
    if (a.do === "kill-worker" || a.do === "retire-worker") alive.delete(a.worker);
    else if (a.do === "add-worker") alive.set(a.worker.name, a.worker);
  }
  return [...alive.values()];
}
