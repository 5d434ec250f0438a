import { writeFile } from "node:fs/promises";
import { BadOptionError } from "../machines/errors.js";
import { openLog } from "../log/reader.js";
import { readTimeBase } from "../log/time-base.js";
import { formatWhatIf } from "../tools/what-if-format.js";
import { whatIfLog } from "../tools/what-if.js";
import { readHostCosts } from "../sim/host-costs.js";
import { parseConfigOverrides } from "./config-overrides.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

const USAGE = `usage: natsched what-if <log> [--set key=value ...] [--host name=seconds ...] [--scenario out.json] [--json]
  re-runs the log's workload on the simulator under the recorded config and under the changed one
  --set key=value   a config setting to change, read like NATSCHED_SCHEDULER__* values
                    (e.g. workStealing=false, workerSaturation=inf, bandwidth=1GB)
  --host name=seconds  a host cost to use instead of the one measured on the log (schedulerDelay,
                    workerDelay, taskStart, schedulerOp, graphIntake, warmUp, stealAnswer;
                    docs/simulator.md)
  --scenario <path> also write the extracted workload as a scenario (natsched simulate runs it)
  --json            print the comparison as JSON`;

/** `natsched what-if`: exit 0 after printing the comparison, 1 on an unreadable log, 2 on bad usage. */
export async function whatIfCommand(args: string[], io: Io): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    io.out(USAGE);
    return 0;
  }
  let parsed;
  let hostCosts: Record<string, number> | undefined;
  try {
    parsed = parseFlags(args, { set: { type: "string", multiple: true }, host: { type: "string", multiple: true }, scenario: { type: "string" }, json: { type: "boolean" } }, true);
    if (parsed.positionals.length !== 1) throw new BadOptionError("log", "give exactly one log file");
    hostCosts = parseHostCosts(parsed.values.host ?? []);
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched what-if: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const path = positionals[0]!;
  const changes = parseConfigOverrides(values.set ?? []);
  const result = await whatIfLog(path, { changes, ...(hostCosts !== undefined ? { hostCosts } : {}) });
  for (const problem of result.problems) io.err(`warning: ${problem.kind}: ${problem.message}`);
  if (values.scenario !== undefined) await writeFile(values.scenario, JSON.stringify(result.workload.scenario, null, 1) + "\n");
  if (values.json) {
    const { workload, problems, ...rest } = result;
    const { summary, notes, origin } = workload;
    const hosts = { ...workload.hostCosts, hostCosts: workload.scenario.hostCosts };
    io.out(JSON.stringify({ log: path, workload: { summary, notes, origin, network: workload.scenario.network, hostCosts: hosts }, ...rest, problems }, jsonSafe, 2));
  } else {
    io.out(formatWhatIf(result, path));
    // The one time in the output: where the recorded run's measure starts (the simulated runs' t=0).
    const time = await readTimeBase(await openLog(path));
    if (Number.isFinite(result.workload.origin)) io.out(`recorded run measured from its first graph, at ${time.at(result.workload.origin, 3)}; ${time.describe()}`);
    if (values.scenario !== undefined) io.out(`scenario written to ${values.scenario} (natsched simulate ${values.scenario} --set ...)`);
  }
  return 0;
}

/** `--host name=seconds` values; none given: undefined (the measured costs). */
function parseHostCosts(values: string[]): Record<string, number> | undefined {
  if (values.length === 0) return undefined;
  const costs: Record<string, number> = {};
  for (const value of values) {
    const eq = value.indexOf("=");
    const seconds = eq > 0 ? Number(value.slice(eq + 1)) : NaN;
    if (eq <= 0 || value.slice(eq + 1).trim() === "" || !Number.isFinite(seconds)) throw new BadOptionError("host", `give name=seconds, got ${JSON.stringify(value)}`);
    costs[value.slice(0, eq)] = seconds;
  }
  readHostCosts(costs, "--host");
  return costs;
}

/** Infinity (workerSaturation=inf) and NaN (no recorded makespan) as JSON strings rather than null. */
function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === "number" && !Number.isFinite(value) ? String(value) : value;
}
