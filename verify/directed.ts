/**
 * Directed cases: DST cases kept because each takes machine edges random campaigns reach only
 * rarely (a free-keys overtaken at the one moment it matters, a group turning root-ish while
 * no worker runs). Saved as JSON under tests/fixtures/directed/ (format
 * `natsched-dst-directed/1`: the edges, a note on how the case takes them, where it came
 * from, the case); every campaign runs them with its random cases, so their edges count in
 * its coverage, and every invariant must hold on them as on any case.
 * `npx tsx verify/find-edge.ts` searches for a case taking an edge and shrinks it.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BadOptionError } from "../machines/errors.js";
import type { DstCase, FaultProfile } from "./dst-case.js";
import { runCase, type CaseReport } from "./run-case.js";

export const DIRECTED_FORMAT = "natsched-dst-directed/1";
export const DEFAULT_DIRECTED_DIR = "tests/fixtures/directed";

export interface DirectedCase {
  format: typeof DIRECTED_FORMAT;
  /** The edges it is kept for ("machine: from -EVENT-> to"). */
  edges: string[];
  /** How the case takes them. */
  note: string;
  /** The search that found it (verify/find-edge.ts), or "by hand". */
  found: { seed: number; path: string; profile: FaultProfile } | "by hand";
  case: DstCase;
}

export function loadDirected(dir: string): { path: string; directed: DirectedCase }[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .sort()
    .map((name) => {
      const path = join(dir, name);
      return { path, directed: parseDirected(readFileSync(path, "utf8"), path) };
    });
}

export function parseDirected(text: string, path: string): DirectedCase {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new BadOptionError(path, `not JSON: ${(error as Error).message}`);
  }
  const d = raw as Partial<DirectedCase> | null;
  if (typeof d !== "object" || d === null || d.format !== DIRECTED_FORMAT) throw new BadOptionError(`${path}: format`, `must be ${JSON.stringify(DIRECTED_FORMAT)}`);
  if (!Array.isArray(d.edges) || d.edges.length === 0 || !d.edges.every((e) => typeof e === "string")) throw new BadOptionError(`${path}: edges`, "must name at least one edge");
  if (typeof d.note !== "string" || d.note === "") throw new BadOptionError(`${path}: note`, "must say how the case takes its edges");
  if (typeof d.case !== "object" || d.case === null || typeof d.case.scenario !== "object") throw new BadOptionError(`${path}: case`, "must be a DST case ({scenario, restartAt?})");
  return d as DirectedCase;
}

/** Writes a directed case, named after its first edge, and returns its path. */
export function saveDirected(dir: string, directed: DirectedCase): string {
  mkdirSync(dir, { recursive: true });
  const slug = directed.edges[0]!.replace(/[^A-Za-z0-9]+/g, "-").replace(/^-|-$/g, "").toLowerCase();
  const path = join(dir, `${slug}.json`);
  writeFileSync(path, `${JSON.stringify(directed, null, 2)}\n`);
  return path;
}

export interface DirectedReport {
  report: CaseReport;
  /** Edges the case is kept for that it no longer takes. */
  untaken: string[];
}

/** Runs a directed case with every check, and says which of its edges it did not take. */
export async function runDirected(directed: DirectedCase): Promise<DirectedReport> {
  const report = await runCase(directed.case);
  return { report, untaken: directed.edges.filter((edge) => !report.coverage.has(edge)) };
}
