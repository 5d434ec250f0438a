/** For the tests' own hosts of the cores: every why a core reports is exactly one of the kinds of machines/reasons.ts. */
import { readReason, type MachineName, type Why } from "../machines/reasons.js";

/** Throws (out of the core's handle) on a why of no known kind, or with a field its kind does not name. */
export function exactReason(machine: MachineName, event: string, why: Why | undefined): void {
  if (why !== undefined && readReason({ machine, event, why }, true).kind === "unknown") throw new Error(`${machine} ${event}: a why of no known kind: ${JSON.stringify(why)}`);
}
