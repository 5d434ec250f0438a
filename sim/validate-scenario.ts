/**
 * Checks a scenario and turns it into a Plan. Every problem is a typed error naming the
 * field: BadOptionError (BAD_OPTION) for a bad value or an unknown field, ConfigError for
 * the config, GraphError / UnknownDependencyError / CycleError for the task graph.
 */
import { resolveConfig } from "../machines/config.js";
import { BadOptionError, GraphError } from "../machines/errors.js";
import { validateGraph } from "../machines/graph/index.js";
import { readFaults } from "./faults.js";
import { readHostCosts } from "./host-costs.js";
import type { Plan, PlannedData, PlannedEvent, PlannedSubmission, PlannedTask, PlannedWorker } from "./plan.js";
import { DEFAULT_LATENCY, DEFAULT_TASK_NBYTES, SIM_CLIENT } from "./scenario.js";
import {
  readArray,
  readBoolean,
  readName,
  readNames,
  readNumber,
  readObject,
  readOptionalArray,
  readOptionalNumber,
  readResources,
  type Obj,
} from "./scenario-fields.js";

const SCENARIO_FIELDS = ["seed", "config", "network", "hostCosts", "workers", "data", "tasks", "actions", "faults"];
const NETWORK_FIELDS = ["bandwidth", "latency"];
const WORKER_FIELDS = ["name", "nthreads", "host", "resources", "delay", "roundTrips", "reportHold", "joinAt"];
const DATA_FIELDS = ["key", "nbytes", "on"];
const TASK_FIELDS = ["key", "deps", "duration", "runs", "nbytes", "priority", "workers", "hosts", "resources", "allowOtherWorkers", "submitAt", "client", "error", "failures", "retries", "wanted"];
const ACTIONS = [
  "balance",
  "kill-worker",
  "add-worker",
  "restart-scheduler",
  "submit",
  "release",
  "cancel",
  "fire-and-forget",
  "client-leave",
  "retire-worker",
  "lose-worker",
  "scatter",
  "stop-scheduler",
  "start-scheduler",
];
/** Worker and client names: they name subjects on NATS. */
const WORKER_NAME = /^[A-Za-z0-9_-]+$/;

export function planScenario(scenario: unknown): Plan {
  const raw = readObject(scenario, "scenario", SCENARIO_FIELDS);
  const seed = readOptionalNumber(raw.seed, "seed", 0, { integer: true });
  const config = resolveConfig(raw.config ?? {}, "scenario config");
  const network = raw.network === undefined ? {} : readObject(raw.network, "network", NETWORK_FIELDS);
  const bandwidth = readOptionalNumber(network.bandwidth, "network.bandwidth", config.bandwidth, { above: 0 });
  const latency = readOptionalNumber(network.latency, "network.latency", DEFAULT_LATENCY, { min: 0 });

  const joins = readArray(raw.workers, "workers").map((w, i) => readJoin(w, `workers[${i}]`));
  checkUniqueNames(joins.map((j) => j.worker.name));
  const presentAtStart = new Set(joins.filter((j) => j.at === 0).map((j) => j.worker.name));

  const tasks = readTasks(readArray(raw.tasks, "tasks"));
  const data = readOptionalArray(raw.data, "data").map((d, i) => readData(d, `data[${i}]`, presentAtStart, tasks));
  checkGraph(tasks, new Set(data.map((d) => d.key)));

  const dataSizes = new Map(mergeDuplicateKeys(data).map((d) => [d.key, d.nbytes] as const));
  const actions = readOptionalArray(raw.actions, "actions").map((a, i) => readAction(a, i, tasks, dataSizes));
  checkActionsAgainstWorkers(joins, actions);

  const timeline: PlannedEvent[] = [...joins];
  if (data.length > 0) timeline.push({ at: 0, kind: "place-data", data: mergeDuplicateKeys(data) });
  for (const [at, submission] of submissions(tasks)) timeline.push({ at, kind: "submit", submission });
  for (const { event } of actions) timeline.push(event);
  checkSchedulerDowntime(timeline, actions);
  return { seed, config, latency, bandwidth, hostCosts: readHostCosts(raw.hostCosts), tasks, timeline, faults: readFaults(raw.faults) };
}

function readWorker(value: unknown, path: string, fields: readonly string[]): { spec: PlannedWorker; raw: Obj } {
  const raw = readObject(value, path, fields);
  const name = readName(raw.name, `${path}.name`);
  if (!WORKER_NAME.test(name)) throw new BadOptionError(`${path}.name`, `worker names use letters, digits, '-' and '_', got ${JSON.stringify(name)}`);
  const spec: PlannedWorker = {
    name,
    nthreads: readOptionalNumber(raw.nthreads, `${path}.nthreads`, 1, { integer: true, min: 1 }),
    host: raw.host === undefined ? "localhost" : readName(raw.host, `${path}.host`),
    resources: raw.resources === undefined ? {} : readResources(raw.resources, `${path}.resources`),
    delay: readOptionalNumber(raw.delay, `${path}.delay`, 0, { min: 0 }),
    roundTrips: true,
    reportHold: readOptionalNumber(raw.reportHold, `${path}.reportHold`, 0, { min: 0 }),
  };
  if (raw.roundTrips === false) spec.roundTrips = false;
  else if (raw.roundTrips !== undefined) throw new BadOptionError(`${path}.roundTrips`, `only false is allowed (a worker that measures no round trips), got ${JSON.stringify(raw.roundTrips)}`);
  return { spec, raw };
}

function readJoin(value: unknown, path: string): PlannedEvent & { kind: "join" } {
  const { spec, raw } = readWorker(value, path, WORKER_FIELDS);
  return { at: readOptionalNumber(raw.joinAt, `${path}.joinAt`, 0, { min: 0 }), kind: "join", worker: spec };
}

function checkUniqueNames(names: string[]): void {
  const seen = new Set<string>();
  names.forEach((name, i) => {
    if (seen.has(name)) throw new BadOptionError(`workers[${i}].name`, `duplicate worker name ${name}`);
    seen.add(name);
  });
}

function readTasks(list: unknown[]): Map<string, PlannedTask> {
  const tasks = new Map<string, PlannedTask>();
  list.forEach((value, i) => {
    const path = `tasks[${i}]`;
    const raw = readObject(value, path, TASK_FIELDS);
    const key = readName(raw.key, `${path}.key`);
    if (raw.failures !== undefined && raw.error === undefined) throw new BadOptionError(`${path}.failures`, "needs error (the message its failing runs fail with)");
    if (tasks.has(key)) throw new GraphError(`task ${key} is defined twice (${path})`, "GRAPH", [key]);
    tasks.set(key, {
      key,
      deps: raw.deps === undefined ? [] : [...new Set(readNames(raw.deps, `${path}.deps`))],
      duration: readNumber(raw.duration, `${path}.duration`, { min: 0 }),
      runs: raw.runs === undefined ? undefined : readArray(raw.runs, `${path}.runs`).map((d, j) => readNumber(d, `${path}.runs[${j}]`, { min: 0 })),
      nbytes: readOptionalNumber(raw.nbytes, `${path}.nbytes`, DEFAULT_TASK_NBYTES, { integer: true, min: 0 }),
      priority: raw.priority === undefined ? undefined : readNumber(raw.priority, `${path}.priority`),
      workers: raw.workers === undefined ? undefined : readNames(raw.workers, `${path}.workers`),
      hosts: raw.hosts === undefined ? undefined : readNames(raw.hosts, `${path}.hosts`),
      resources: raw.resources === undefined ? undefined : readResources(raw.resources, `${path}.resources`),
      allowOtherWorkers: raw.allowOtherWorkers === undefined ? undefined : readBoolean(raw.allowOtherWorkers, `${path}.allowOtherWorkers`),
      submitAt: readOptionalNumber(raw.submitAt, `${path}.submitAt`, 0, { min: 0 }),
      client: raw.client === undefined ? SIM_CLIENT : readClient(raw.client, `${path}.client`),
      error: raw.error === undefined ? undefined : readName(raw.error, `${path}.error`),
      failures: raw.failures === undefined ? undefined : readNumber(raw.failures, `${path}.failures`, { integer: true, min: 0 }),
      retries: raw.retries === undefined ? undefined : readNumber(raw.retries, `${path}.retries`, { integer: true, min: 0 }),
      wanted: raw.wanted === undefined ? undefined : readBoolean(raw.wanted, `${path}.wanted`),
    });
  });
  return tasks;
}

function readData(value: unknown, path: string, presentAtStart: Set<string>, tasks: Map<string, PlannedTask>): PlannedData {
  const raw = readObject(value, path, DATA_FIELDS);
  const key = readName(raw.key, `${path}.key`);
  if (tasks.has(key)) throw new GraphError(`${key} is both a task and data (${path})`, "GRAPH", [key]);
  const on = readNames(raw.on, `${path}.on`);
  if (on.length === 0) throw new BadOptionError(`${path}.on`, "must name at least one worker");
  for (const [i, name] of on.entries()) {
    if (!presentAtStart.has(name)) throw new BadOptionError(`${path}.on[${i}]`, `no worker named ${name} is there at t=0`);
  }
  return { key, nbytes: readNumber(raw.nbytes, `${path}.nbytes`, { integer: true, min: 0 }), on: [...new Set(on)] };
}

/** The same key listed twice is one datum held by every worker named. */
function mergeDuplicateKeys(data: PlannedData[]): PlannedData[] {
  const byKey = new Map<string, PlannedData>();
  for (const d of data) {
    const seen = byKey.get(d.key);
    if (seen === undefined) byKey.set(d.key, { ...d, on: [...d.on] });
    else if (seen.nbytes !== d.nbytes) throw new GraphError(`data ${d.key} is listed twice with different sizes`, "GRAPH", [d.key]);
    else for (const w of d.on) if (!seen.on.includes(w)) seen.on.push(w);
  }
  return [...byKey.values()];
}

function checkGraph(tasks: Map<string, PlannedTask>, dataKeys: Set<string>): void {
  validateGraph(new Map([...tasks.values()].map((t) => [t.key, t.deps] as const)), (key) => dataKeys.has(key));
  for (const task of tasks.values()) {
    for (const dep of task.deps) {
      const dts = tasks.get(dep);
      if (dts !== undefined && dts.submitAt > task.submitAt) {
        throw new GraphError(
          `task ${task.key} (submitAt ${task.submitAt}) depends on ${dep}, which is submitted later (submitAt ${dts.submitAt})`,
          "GRAPH",
          [task.key, dep],
        );
      }
      if (dts !== undefined && dts.submitAt === task.submitAt && dts.client !== task.client) {
        throw new GraphError(
          `task ${task.key} (client ${task.client}) depends on ${dep} of another client's graph submitted at the same time (${dts.client}, submitAt ${dts.submitAt}): submit it later, or in the same graph`,
          "GRAPH",
          [task.key, dep],
        );
      }
    }
  }
}

/**
 * One graph per distinct submitAt and client, in time order (at one time, in the order the
 * clients first appear in `tasks`). Each carries the specs of the earlier tasks it builds on.
 */
function submissions(tasks: Map<string, PlannedTask>): [number, PlannedSubmission][] {
  const graphs = new Map<string, PlannedTask[]>();
  for (const task of tasks.values()) {
    const id = `${task.submitAt}\u0000${task.client}`;
    let group = graphs.get(id);
    if (group === undefined) graphs.set(id, (group = []));
    group.push(task);
  }
  const neededLater = new Set<string>();
  const dependedOnWithin = new Set<string>();
  for (const task of tasks.values()) {
    for (const dep of task.deps) {
      const dts = tasks.get(dep);
      if (dts === undefined) continue;
      if (dts.submitAt < task.submitAt) neededLater.add(dep);
      else dependedOnWithin.add(dep);
    }
  }
  return [...graphs.values()]
    .sort((a, b) => a[0]!.submitAt - b[0]!.submitAt)
    .map((group) => {
      const wants = group.filter((t) => t.wanted ?? (!dependedOnWithin.has(t.key) || neededLater.has(t.key))).map((t) => t.key);
      return [group[0]!.submitAt, { client: group[0]!.client, tasks: withEarlierDeps(group, tasks), wants }];
    });
}

/**
 * The tasks of a submission after every task they depend on that is not among them
 * (transitively, dependencies first): what a client sends so that the graph names no key
 * the scheduler may have forgotten. Data keys have no spec: the client holding them keeps them.
 */
export function withEarlierDeps(group: readonly PlannedTask[], tasks: ReadonlyMap<string, PlannedTask>): PlannedTask[] {
  const inGroup = new Set(group.map((t) => t.key));
  const added = new Set<string>();
  const out: PlannedTask[] = [];
  const visit = (key: string): void => {
    if (inGroup.has(key) || added.has(key)) return;
    const task = tasks.get(key);
    if (task === undefined) return;
    added.add(key);
    for (const dep of task.deps) visit(dep);
    out.push(task);
  };
  for (const task of group) for (const dep of task.deps) visit(dep);
  return out.length === 0 ? [...group] : [...out, ...group];
}

interface ReadAction {
  index: number;
  event: PlannedEvent & {
    kind: "join" | "kill" | "balance" | "restart-scheduler" | "submit" | "release" | "cancel" | "fire-and-forget" | "client-leave" | "retire" | "lose" | "scatter" | "stop-scheduler" | "start-scheduler";
  };
}

/**
 * stop-scheduler and start-scheduler alternate, a stop first; nothing else happens while the
 * scheduler is down (from a stop to its start, both included): no worker joins or action, no
 * graph, no client action. (What is sent to a stopped scheduler is lost; the simulator does
 * not model clients waiting for it.)
 */
function checkSchedulerDowntime(timeline: PlannedEvent[], actions: ReadAction[]): void {
  const path = new Map(actions.map(({ event, index }) => [event, `actions[${index}]`] as const));
  const turns = actions.filter(({ event }) => event.kind === "stop-scheduler" || event.kind === "start-scheduler").sort((a, b) => a.event.at - b.event.at || a.index - b.index);
  const windows: [number, number][] = [];
  let stoppedAt: number | null = null;
  for (const { event, index } of turns) {
    if (event.kind === "stop-scheduler") {
      if (stoppedAt !== null) throw new BadOptionError(`actions[${index}]`, `the scheduler is already stopped at t=${event.at} (since t=${stoppedAt})`);
      stoppedAt = event.at;
    } else {
      if (stoppedAt === null) throw new BadOptionError(`actions[${index}]`, `start-scheduler at t=${event.at}: the scheduler is running (stop-scheduler first)`);
      windows.push([stoppedAt, event.at]);
      stoppedAt = null;
    }
  }
  if (stoppedAt !== null) windows.push([stoppedAt, Infinity]);
  for (const event of timeline) {
    if (event.kind === "stop-scheduler" || event.kind === "start-scheduler") continue;
    const window = windows.find(([from, to]) => event.at >= from && event.at <= to);
    if (window === undefined) continue;
    const where = path.get(event as ReadAction["event"]) ?? (event.kind === "join" ? `workers (${event.worker.name} joins at t=${event.at})` : event.kind === "submit" ? `tasks (a graph at t=${event.at})` : "scenario");
    throw new BadOptionError(where, `the scheduler is stopped from t=${window[0]} to ${window[1] === Infinity ? "the end" : `t=${window[1]}`}: nothing else happens meanwhile`);
  }
}

function readClient(value: unknown, path: string): string {
  const name = readName(value, path);
  if (!WORKER_NAME.test(name)) throw new BadOptionError(path, `client names use letters, digits, '-' and '_', got ${JSON.stringify(name)}`);
  return name;
}

/** Keys of tasks of the scenario (data keys are not: the client that scattered them holds them for the whole run). */
function readTaskKeys(value: unknown, path: string, tasks: ReadonlyMap<string, PlannedTask>): string[] {
  const keys = readNames(value, path);
  if (keys.length === 0) throw new BadOptionError(path, "must name at least one task");
  keys.forEach((key, i) => {
    if (!tasks.has(key)) throw new BadOptionError(`${path}[${i}]`, `${JSON.stringify(key)} is not a task of this scenario (data is held by ${SIM_CLIENT} for the whole run)`);
  });
  return [...new Set(keys)];
}

function readAction(value: unknown, index: number, tasks: ReadonlyMap<string, PlannedTask>, dataSizes: ReadonlyMap<string, number>): ReadAction {
  const hasData = dataSizes.size > 0;
  const path = `actions[${index}]`;
  const kind = (value as Obj | null)?.do;
  if (typeof kind !== "string" || !ACTIONS.includes(kind)) {
    readObject(value, path, ["at", "do", "worker"]);
    throw new BadOptionError(`${path}.do`, `must be one of ${ACTIONS.map((a) => JSON.stringify(a)).join(", ")}, got ${JSON.stringify(kind)}`);
  }
  if (kind === "balance" || kind === "restart-scheduler" || kind === "stop-scheduler" || kind === "start-scheduler") {
    const raw = readObject(value, path, ["at", "do"]);
    return { index, event: { at: readNumber(raw.at, `${path}.at`, { min: 0 }), kind } };
  }
  if (kind === "submit" || kind === "release" || kind === "cancel" || kind === "fire-and-forget" || kind === "client-leave") {
    const raw = readObject(value, path, kind === "client-leave" ? ["at", "do", "client"] : ["at", "do", "client", "keys"]);
    const at = readNumber(raw.at, `${path}.at`, { min: 0 });
    const client = raw.client === undefined ? SIM_CLIENT : readClient(raw.client, `${path}.client`);
    if (kind === "client-leave") {
      if (client === SIM_CLIENT && hasData) throw new BadOptionError(`${path}.client`, `${SIM_CLIENT} holds the scenario's data for the whole run: it cannot leave`);
      return { index, event: { at, kind, client } };
    }
    const keys = readTaskKeys(raw.keys, `${path}.keys`, tasks);
    if (kind === "release" || kind === "cancel" || kind === "fire-and-forget") return { index, event: { at, kind, client, keys } };
    const group = keys.map((key) => tasks.get(key)!);
    return { index, event: { at, kind: "submit", submission: { client, tasks: withEarlierDeps(group, tasks), wants: keys } } };
  }
  if (kind === "scatter") {
    const raw = readObject(value, path, ["at", "do", "client", "keys", "on"]);
    const at = readNumber(raw.at, `${path}.at`, { min: 0 });
    const client = raw.client === undefined ? SIM_CLIENT : readClient(raw.client, `${path}.client`);
    const keys = readNames(raw.keys, `${path}.keys`);
    if (keys.length === 0) throw new BadOptionError(`${path}.keys`, "must name at least one key");
    keys.forEach((key, i) => {
      if (!dataSizes.has(key)) throw new BadOptionError(`${path}.keys[${i}]`, `${JSON.stringify(key)} is not data of this scenario (a scatter puts the scenario's data again)`);
    });
    const on = readNames(raw.on, `${path}.on`);
    if (on.length === 0) throw new BadOptionError(`${path}.on`, "must name at least one worker");
    const data = [...new Set(keys)].map((key) => ({ key, nbytes: dataSizes.get(key)! }));
    return { index, event: { at, kind: "scatter", client, data, on: [...new Set(on)] } };
  }
  if (kind === "retire-worker" || kind === "lose-worker") {
    const raw = readObject(value, path, kind === "retire-worker" ? ["at", "do", "worker", "timeout"] : ["at", "do", "worker", "back"]);
    const at = readNumber(raw.at, `${path}.at`, { min: 0 });
    const worker = readName(raw.worker, `${path}.worker`);
    if (kind === "lose-worker") return { index, event: { at, kind: "lose", worker, back: readNumber(raw.back, `${path}.back`, { min: 0 }) } };
    return { index, event: { at, kind: "retire", worker, timeout: readOptionalNumber(raw.timeout, `${path}.timeout`, Infinity, { min: 0 }) } };
  }
  const raw = readObject(value, path, ["at", "do", "worker"]);
  const at = readNumber(raw.at, `${path}.at`, { min: 0 });
  if (kind === "kill-worker") return { index, event: { at, kind: "kill", worker: readName(raw.worker, `${path}.worker`) } };
  const { spec } = readWorker(raw.worker, `${path}.worker`, WORKER_FIELDS.filter((f) => f !== "joinAt"));
  return { index, event: { at, kind: "join", worker: spec } };
}

/**
 * Walks joins and actions in time order: a worker is killed, retired or lost only while alive
 * (and not lost: it registers again `back` seconds later), added only while absent; a retired
 * worker's name is used no more (it closes when the scheduler says so, which the scenario
 * cannot know). Scatter names workers of the scenario.
 */
function checkActionsAgainstWorkers(joins: PlannedEvent[], actions: ReadAction[]): void {
  const steps = [
    ...joins.map((event, order) => ({ event, order, path: `workers[${order}].name` })),
    ...actions.map(({ event, index }) => ({
      event,
      order: joins.length + index,
      path: event.kind === "join" ? `actions[${index}].worker.name` : event.kind === "scatter" ? `actions[${index}].on` : `actions[${index}].worker`,
    })),
  ].sort((a, b) => a.event.at - b.event.at || a.order - b.order);
  const alive = new Set<string>();
  const ever = new Set<string>();
  const retired = new Set<string>();
  /** Lost workers: when they register again. */
  const lostUntil = new Map<string, number>();
  const running = (name: string, at: number, path: string): void => {
    if (alive.has(name)) return;
    const why = retired.has(name) ? "was retired" : ever.has(name) ? "is not running" : "is not a worker of this scenario";
    throw new BadOptionError(path, `${name} ${why} at t=${at}`);
  };
  for (const { event, path } of steps) {
    if (event.kind === "join") {
      if (alive.has(event.worker.name)) throw new BadOptionError(path, `worker ${event.worker.name} is already running at t=${event.at}`);
      if (retired.has(event.worker.name)) throw new BadOptionError(path, `worker ${event.worker.name} was retired: its name is not used again`);
      alive.add(event.worker.name);
      ever.add(event.worker.name);
      lostUntil.delete(event.worker.name);
    } else if (event.kind === "kill") {
      running(event.worker, event.at, path);
      alive.delete(event.worker);
    } else if (event.kind === "retire" || event.kind === "lose") {
      running(event.worker, event.at, path);
      const back = lostUntil.get(event.worker);
      if (back !== undefined && event.at < back) throw new BadOptionError(path, `${event.worker} is lost until t=${back} (it registers again then)`);
      if (event.kind === "retire") {
        alive.delete(event.worker);
        retired.add(event.worker);
      } else {
        lostUntil.set(event.worker, event.at + event.back);
      }
    }
  }
  // Scatter names workers of the scenario; the first of them alive at the time takes the data.
  const names = new Set(steps.flatMap(({ event }) => (event.kind === "join" ? [event.worker.name] : [])));
  for (const { event, path } of steps) {
    if (event.kind !== "scatter") continue;
    event.on.forEach((name, i) => {
      if (!names.has(name)) throw new BadOptionError(`${path}[${i}]`, `${name} is not a worker of this scenario`);
    });
  }
}
