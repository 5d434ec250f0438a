import { formatSimResult } from "../sim/format.js";
import { readScenarioFile } from "../sim/file.js";
import { simulate } from "../sim/simulator.js";
import { BadOptionError } from "../machines/errors.js";
import { FileLogSink } from "../log/file-log.js";
import { parseConfigOverrides } from "./config-overrides.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

const USAGE = `usage: natsched simulate <scenario.json|.yaml> [--set key=value ...] [--seed N] [--log out.natlog] [--json]
  --set key=value   override a config setting of the scenario (e.g. workStealing=false, workerSaturation=inf)
  --seed N          override the scenario's PRNG seed
  --log <path>      write the simulated event log to a file (natsched replay / story read it)
  --json            print the result (without the log) as JSON`;

/** `natsched simulate`: run a scenario on the simulator and report; exit 1 if a task did not finish. */
export async function simulateCommand(args: string[], io: Io): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    io.out(USAGE);
    return 0;
  }
  let parsed;
  try {
    parsed = parseFlags(args, {
      set: { type: "string", multiple: true },
      seed: { type: "string" },
      log: { type: "string" },
      json: { type: "boolean" },
    }, true);
    if (parsed.positionals.length !== 1) throw new BadOptionError("scenario", "give exactly one scenario file");
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched simulate: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const scenario = await readScenarioFile(positionals[0]!);
  const overrides = parseConfigOverrides(values.set ?? []);
  if (Object.keys(overrides).length > 0) scenario.config = { ...(scenario.config ?? {}), ...overrides };
  if (values.seed !== undefined) {
    const seed = Number(values.seed);
    if (!Number.isSafeInteger(seed)) throw new BadOptionError("--seed", `expected an integer, got "${values.seed}"`);
    scenario.seed = seed;
  }

  const result = simulate(scenario);
  if (values.log !== undefined) {
    const sink = await FileLogSink.open(values.log, { meta: { source: "natsched simulate", scenario: positionals[0] } });
    for (const record of result.log) sink.append(record);
    await sink.close();
  }
  if (values.json) {
    const { log: _log, ...rest } = result;
    io.out(JSON.stringify({ ...rest, logRecords: result.log.length }, null, 2));
  } else {
    io.out(formatSimResult(result));
    if (values.log !== undefined) io.out(`log file   ${values.log}`);
  }
  const unfinished = Object.values(result.tasks).some((t) => !FINISHED.has(t.state));
  return unfinished ? 1 : 0;
}

const FINISHED = new Set(["memory", "released", "forgotten", "erred"]);
