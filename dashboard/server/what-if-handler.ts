/**
 * `POST /api/what-if`: the log's workload re-run on the simulator with changed settings
 * (tools/what-if.ts's extraction and scenario), answered as the recorded and the simulated
 * task streams with their makespans. Bad settings are a 400 naming the setting.
 */
import { isConfigKey, resolveConfig, type Config } from "../../machines/config.js";
import { parseEnvValue } from "../../machines/config-sources.js";
import { Worker } from "node:worker_threads";
import { BadOptionError, ConfigError, NatschedError, type ErrorCode } from "../../machines/errors.js";
import { isJetStreamLocation } from "../../log/jetstream-open.js";
import { threadSource } from "../../log/thread-source.js";
import type { LogRecord } from "../../log/types.js";
import { readHostCosts } from "../../sim/host-costs.js";
import { readObject, readNumber } from "../../sim/scenario-fields.js";
import type { Scenario, SimResult } from "../../sim/scenario.js";
import { simulate } from "../../sim/simulator.js";
import { encodeTaskStream, TaskStreamBuilder, taskStreamOf, type TaskStream } from "../../tools/task-stream.js";
import { withChanges, withHostCosts } from "../../tools/what-if.js";
import { WorkloadExtractor } from "../../tools/workload-extract.js";
import type { Handler } from "./route-types.js";
import { safeJson, typedProblem } from "./views-reply.js";
import type { WhatIfAnswer, WhatIfRequest } from "./what-if-wire.js";

/** What a request asks for, checked: config changes resolved, host costs and threads in range. */
export interface WhatIfSettings {
  changes: Partial<Config>;
  hostCosts?: Record<string, number>;
  threads?: number;
}

/** A request body as settings; anything wrong is a BadOptionError or ConfigError naming the field. */
export function readWhatIfRequest(body: unknown): WhatIfSettings {
  const request = readObject(body, "body", ["set", "host", "threads"]) as WhatIfRequest;
  const settings: WhatIfSettings = { changes: {} };
  if (request.set !== undefined) {
    const raw = readObject(request.set, "set", Object.keys(request.set ?? {}));
    const given: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(raw)) {
      if (!isConfigKey(key)) {
        // resolveConfig says the same with a suggestion; ask it, so the message is the CLI's.
        resolveConfig({ [key]: value }, "what-if");
        throw new ConfigError(key, "unknown setting");
      }
      given[key] = typeof value === "string" ? parseEnvValue(value, `set.${key}`) : value;
    }
    const resolved = resolveConfig(given, "what-if");
    for (const key of Object.keys(given)) (settings.changes as Record<string, unknown>)[key] = resolved[key as keyof Config];
  }
  if (request.host !== undefined) {
    // Checked as a scenario's hostCosts are: known names, seconds >= 0.
    readHostCosts(request.host, "host");
    settings.hostCosts = { ...request.host };
  }
  if (request.threads !== undefined) settings.threads = readNumber(request.threads, "threads", { integer: true, min: 1 });
  return settings;
}

/** The scenario with every worker, and every worker that joins later, given `threads` executor threads. */
function withThreads(scenario: Scenario, threads: number | undefined): Scenario {
  if (threads === undefined) return scenario;
  return {
    ...scenario,
    workers: scenario.workers.map((w) => ({ ...w, nthreads: threads })),
    ...(scenario.actions !== undefined
      ? { actions: scenario.actions.map((a) => (a.do === "add-worker" ? { ...a, worker: { ...a.worker, nthreads: threads } } : a)) }
      : {}),
  };
}

const FINISHED = new Set(["memory", "released", "forgotten", "erred"]);

/** `stream` with every time moved `dt` seconds later. */
function shifted(stream: TaskStream, dt: number): TaskStream {
  return {
    ...stream,
    runStart: stream.runStart - dt,
    end: stream.end + dt,
    workers: stream.workers.map((w) => ({ ...w, joined: w.joined + dt, ...(w.left !== undefined ? { left: w.left + dt } : {}) })),
    bars: stream.bars.map((b) => ({ ...b, start: b.start + dt, end: b.end + dt })),
    transfers: stream.transfers.map((x) => ({ ...x, start: x.start + dt, end: x.end + dt })),
    steals: stream.steals.map((s) => ({ ...s, t: s.t + dt, ...(s.end !== undefined ? { end: s.end + dt } : {}) })),
    deaths: stream.deaths.map((d) => ({ ...d, t: d.t + dt })),
  };
}

/** The recorded and simulated streams of the workload in `records` under `settings`. */
export function whatIfStreams(records: Iterable<LogRecord>, settings: WhatIfSettings): WhatIfAnswer {
  const extractor = new WorkloadExtractor();
  const recorded = new TaskStreamBuilder();
  for (const record of records) {
    extractor.add(record);
    recorded.add(record);
  }
  const workload = withHostCosts(extractor.finish(), settings.hostCosts);
  const recordedStream = recorded.snapshot();
  // Host costs apply to both simulations (as `natsched what-if --host` does): they change the model, not the run.
  const changed = Object.keys(settings.changes).length > 0 || settings.threads !== undefined;
  const result: SimResult = simulate(changed ? withThreads(withChanges(workload.scenario, settings.changes), settings.threads) : workload.scenario);
  const asRecorded = changed ? simulate(workload.scenario, { log: false }).makespan : result.makespan;
  // The simulation's t=0 is the recorded run's first graph: placed there, the streams share one axis.
  const origin = Number.isFinite(workload.origin) ? workload.origin - recordedStream.runStart : 0;
  const simulatedFolded = taskStreamOf(result.log);
  // Its times are from its first record; the simulation's own t=0 is `origin` on the recorded axis.
  const simulatedStream = shifted(simulatedFolded, origin + simulatedFolded.runStart);
  const makespan = workload.recorded.makespan;
  return {
    changes: settings.changes as Record<string, unknown>,
    ...(settings.threads !== undefined ? { threads: settings.threads } : {}),
    ...(settings.hostCosts !== undefined ? { hostCosts: settings.hostCosts } : {}),
    origin,
    recorded: { makespan, stream: encodeTaskStream(recordedStream) },
    simulated: {
      makespan: result.makespan,
      stream: encodeTaskStream(simulatedStream),
      unfinished: Object.values(result.tasks).filter((t) => !FINISHED.has(t.state)).length,
    },
    asRecorded: { makespan: asRecorded },
    ratio: makespan > 0 ? result.makespan / makespan : NaN,
    notes: workload.notes,
  };
}

/** whatIfStreams on a thread of its own (what-if-thread.ts): over the log file at `path`, or over `records`. */
export async function whatIfOnThread(source: { path: string } | { records: readonly LogRecord[] }, settings: WhatIfSettings): Promise<WhatIfAnswer> {
  const thread = new Worker(threadSource(import.meta.url, "what-if-thread"), { eval: true, name: "natsched what-if", workerData: { settings, ...source } });
  try {
    const reply = await new Promise<{ answer?: WhatIfAnswer; error?: string; code?: string }>((resolve) => {
      thread.once("message", resolve);
      thread.once("error", (error) => resolve({ error: error.message }));
      thread.once("exit", (code) => resolve({ error: `the what-if thread stopped (exit code ${code})` }));
    });
    if (reply.answer !== undefined) return reply.answer;
    // A typed error from the simulation (a setting it refuses) is still the request's fault.
    if (reply.code !== undefined) throw new NatschedError(reply.code as ErrorCode, reply.error ?? "what-if failed");
    throw new Error(reply.error ?? "what-if failed");
  } finally {
    await thread.terminate();
  }
}

export const whatIfHandler: Handler = async ({ model, body }) => {
  let settings: WhatIfSettings;
  try {
    const text = (await body()).trim();
    let parsed: unknown = {};
    try {
      if (text !== "") parsed = JSON.parse(text);
    } catch (error) {
      throw new BadOptionError("body", `not JSON: ${(error as Error).message}`);
    }
    settings = readWhatIfRequest(parsed);
  } catch (error) {
    return typedProblem(error);
  }
  await model.whenLoaded();
  const { records, dropped } = await model.kept();
  // A log file is read again by the thread (cheaper than copying its records over); other sources' records are copied.
  const file = model.source.kind === "log" && !isJetStreamLocation(model.source.location);
  let answer: WhatIfAnswer;
  try {
    answer = await whatIfOnThread(file ? { path: model.source.location } : { records }, settings);
  } catch (error) {
    return typedProblem(error);
  }
  if (dropped > 0) answer.notes.unshift(`the dashboard keeps the latest ${records.length} records: the workload is what they hold (${dropped} records before them are in the log)`);
  return safeJson(answer);
};
