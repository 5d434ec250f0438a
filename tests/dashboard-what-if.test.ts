/**
 * POST /api/what-if over a real recorded log: the settings read as `natsched what-if` reads
 * them (bad ones a 400 naming them), the recorded and simulated streams with the makespans
 * tools/what-if.ts gives for the same settings.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, BadOptionError } from "../machines/errors.js";
import { readLogSync } from "../log/reader.js";
import type { LogRecord } from "../log/types.js";
import { decodeTaskStream } from "../tools/task-stream.js";
import { whatIf } from "../tools/what-if.js";
import { readWhatIfRequest, whatIfStreams } from "../dashboard/server/what-if-handler.js";
import type { WhatIfAnswer } from "../dashboard/server/what-if-wire.js";
import type { ErrorBody } from "../dashboard/server/views-reply.js";
import { servedLog } from "./support/served-log.js";

const LOG = "tests/fixtures/logs/old-98e2957.natlog";
const records: LogRecord[] = readLogSync(LOG).records;
const executions = (log: readonly LogRecord[]) => log.filter((r) => r.kind === "transition" && r.machine === "wtask" && r.event === "EXECUTE").length;

describe("readWhatIfRequest", () => {
  it("reads settings as natsched what-if --set does: JSON values, or strings like the environment's", () => {
    expect(readWhatIfRequest({ set: { workerSaturation: "inf", workStealing: "false", bandwidth: "1GB" }, threads: 3, host: { taskStart: 0 } })).toEqual({
      changes: { workerSaturation: Infinity, workStealing: false, bandwidth: 1e9 },
      threads: 3,
      hostCosts: { taskStart: 0 },
    });
    expect(readWhatIfRequest({})).toEqual({ changes: {} });
  });

  it("names what is wrong, with a typed error", () => {
    const wrong = (body: unknown) => {
      try {
        readWhatIfRequest(body);
      } catch (error) {
        return error;
      }
      throw new Error(`accepted ${JSON.stringify(body)}`);
    };
    expect(wrong({ set: { workerSaturaton: 2 } })).toEqual(expect.objectContaining({ constructor: ConfigError, message: expect.stringContaining('did you mean "workerSaturation"') }));
    expect(wrong({ set: { workerSaturation: -1 } })).toBeInstanceOf(ConfigError);
    expect(wrong({ set: { workStealing: "maybe" } })).toBeInstanceOf(ConfigError);
    expect(wrong({ host: { taskStart: -1 } })).toEqual(expect.objectContaining({ constructor: BadOptionError, message: expect.stringContaining("host.taskStart") }));
    expect(wrong({ host: { nope: 1 } })).toEqual(expect.objectContaining({ message: expect.stringContaining("host.nope: unknown field") }));
    expect(wrong({ threads: 0 })).toEqual(expect.objectContaining({ message: expect.stringContaining("threads") }));
    expect(wrong({ threads: 1.5 })).toBeInstanceOf(BadOptionError);
    expect(wrong({ workers: 2 })).toEqual(expect.objectContaining({ message: expect.stringContaining("body.workers: unknown field") }));
    expect(wrong([])).toBeInstanceOf(BadOptionError);
    expect(wrong("workStealing=false")).toBeInstanceOf(BadOptionError);
  });
});

describe("whatIfStreams on a recorded run", () => {
  it("with nothing changed: the recorded stream's bars are the log's executions, and the makespans are what-if's", async () => {
    const answer = whatIfStreams(records, readWhatIfRequest({}));
    const expected = whatIf(records);
    const recorded = decodeTaskStream(answer.recorded.stream);
    expect(recorded.bars).toHaveLength(executions(records));
    expect(recorded.workers.map((w) => w.name).sort()).toEqual(["a", "b", "c"]);
    expect(answer.recorded.makespan).toBe(expected.recorded.makespan);
    expect(answer.simulated.makespan).toBe(expected.original.makespan);
    expect(answer.asRecorded.makespan).toBe(expected.original.makespan);
    expect(answer.ratio).toBe(expected.ratio);
    expect(answer.simulated.unfinished).toBe(expected.original.unfinished);
  });

  it("with stealing off and one thread per worker: the makespan what-if gives, every worker on one lane, the stream placed at the first graph", async () => {
    const answer = whatIfStreams(records, readWhatIfRequest({ set: { workStealing: false }, threads: 1 }));
    const simulated = decodeTaskStream(answer.simulated.stream);
    const recorded = whatIf(records);
    expect(answer.recorded.makespan).toBe(recorded.recorded.makespan);
    expect(answer.asRecorded.makespan).toBe(recorded.original.makespan);
    expect(answer.changes).toEqual({ workStealing: false });
    expect(simulated.workers.every((w) => w.threads === 1)).toBe(true);
    expect(simulated.steals).toEqual([]);
    expect(simulated.bars.length).toBeGreaterThan(0);
    expect(answer.origin).toBeGreaterThan(0);
    expect(Math.min(...simulated.bars.map((b) => b.start))).toBeGreaterThanOrEqual(answer.origin - 1e-6);
    // The simulation ends when its last execution does: the stream's last bar ends at the makespan (after the origin).
    expect(Math.max(...simulated.bars.map((b) => b.end)) - answer.origin).toBeCloseTo(answer.simulated.makespan, 5);
    expect(answer.ratio).toBeCloseTo(answer.simulated.makespan / answer.recorded.makespan, 12);
  });
});

describe("POST /api/what-if", () => {
  const served = servedLog(LOG);

  const post = (body: string) => fetch(`${served.base}/api/what-if`, { method: "POST", headers: { "content-type": "application/json" }, body });

  it("answers both streams and makespans, Infinity as a string", async () => {
    const res = await post(JSON.stringify({ set: { workerSaturation: "inf" } }));
    expect(res.status).toBe(200);
    const answer = (await res.json()) as WhatIfAnswer;
    expect(answer.changes).toEqual({ workerSaturation: "Infinity" });
    expect(decodeTaskStream(answer.recorded.stream).bars).toHaveLength(executions(records));
    expect(decodeTaskStream(answer.simulated.stream).bars.length).toBeGreaterThan(0);
    expect(answer.simulated.makespan).toBe(whatIf(records, { changes: { workerSaturation: Infinity } }).changed!.makespan);
  });

  it("runs on a thread of its own: the server answers other requests meanwhile", async () => {
    let whatIfDone = false;
    const running = post(JSON.stringify({ set: { workStealing: false } })).then(async (res) => {
      whatIfDone = true;
      return res;
    });
    const answeredDuring: boolean[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${served.base}/api/summary`);
      expect(res.status).toBe(200);
      answeredDuring.push(!whatIfDone);
    }
    // A what-if on the server's thread would answer first: the summaries would wait for it.
    expect(answeredDuring).toEqual([true, true, true]);
    const res = await running;
    expect(res.status).toBe(200);
    const answer = (await res.json()) as WhatIfAnswer;
    expect(answer.simulated.makespan).toBe(whatIf(records, { changes: { workStealing: false } }).changed!.makespan);
  });

  it("refuses bad settings and bad JSON with a 400 and a typed message", async () => {
    const cases: [Promise<Response>, string, RegExp][] = [
      [post(JSON.stringify({ set: { workerSaturation: 0 } })), "CONFIG", /config workerSaturation: must be > 0/],
      [post("{not json"), "BAD_OPTION", /option body: not JSON/],
      [post(JSON.stringify({ threads: "two" })), "BAD_OPTION", /option threads:/],
    ];
    for (const [response, code, message] of cases) {
      const res = await response;
      expect(res.status).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body.code).toBe(code);
      expect(body.error).toMatch(message);
    }
    expect((await fetch(`${served.base}/api/what-if`)).status).toBe(405);
  });
});
