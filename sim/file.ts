/** Scenarios from files, for `natsched simulate scenario.json`. */
import { readFile } from "node:fs/promises";
import { extname } from "node:path";
import { parse as parseYaml } from "yaml";
import { BadOptionError } from "../machines/errors.js";
import type { Scenario, SimOptions, SimResult } from "./scenario.js";
import { simulate } from "./simulator.js";

/** Reads a scenario from a .json file, or a .yaml / .yml one. It is checked when simulated. */
export async function readScenarioFile(path: string): Promise<Scenario> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new BadOptionError("scenario", `cannot read ${path} (${reason})`);
  }
  const ext = extname(path).toLowerCase();
  const isYaml = ext === ".yaml" || ext === ".yml";
  try {
    return (isYaml ? parseYaml(text) : JSON.parse(text)) as Scenario;
  } catch (error) {
    throw new BadOptionError("scenario", `${path} is not valid ${isYaml ? "YAML" : "JSON"}: ${(error as Error).message}`);
  }
}

export async function simulateFile(path: string, options: SimOptions = {}): Promise<SimResult> {
  return simulate(await readScenarioFile(path), options);
}
