/**
 * Regression fixtures: a failing case, shrunk by fast-check, saved as JSON under
 * tests/fixtures/dst/ and replayed by the test suite from then on.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { BadOptionError } from "../machines/errors.js";
import type { DstCase, FaultProfile } from "./dst-case.js";
import { INVARIANTS, type InvariantId, type Violation } from "./invariants.js";

export const FIXTURE_FORMAT = "natsched-dst-fixture/1";
export const DEFAULT_FIXTURE_DIR = "tests/fixtures/dst";

export interface DstFixture {
  format: typeof FIXTURE_FORMAT;
  /** The invariant the case broke when it was found, and how. */
  invariant: InvariantId;
  message: string;
  /** Where it came from: the campaign's seed and fast-check's path to the counterexample. */
  found: { seed: number; path?: string; profile: FaultProfile };
  /** What was wrong and how it was fixed, filled in by hand once it is. */
  note?: string;
  /**
   * Set while the problem is known and not fixed: why. Such a fixture must still break its
   * invariant (so it is noticed when a change fixes it, and the field is then removed).
   */
  known?: string;
  case: DstCase;
}

export function fixtureFor(dstCase: DstCase, violation: Violation, found: DstFixture["found"]): DstFixture {
  return { format: FIXTURE_FORMAT, invariant: violation.invariant, message: violation.message, found, case: dstCase };
}

/** Writes the fixture (named by invariant and a hash of the case) and returns its path; an existing one is kept. */
export function saveFixture(dir: string, fixture: DstFixture): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${fixture.invariant}-${hash(JSON.stringify(fixture.case))}.json`);
  if (!existsSync(path)) writeFileSync(path, `${JSON.stringify(fixture, null, 2)}\n`);
  return path;
}

/** Every fixture in `dir`, sorted by file name; a missing directory has none. */
export function loadFixtures(dir: string): { path: string; fixture: DstFixture }[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .sort()
    .map((name) => {
      const path = join(dir, name);
      return { path, fixture: parseFixture(readFileSync(path, "utf8"), path) };
    });
}

/** Reads one fixture; anything malformed is a BadOptionError naming the file and field. */
export function parseFixture(text: string, path: string): DstFixture {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new BadOptionError(path, `is not JSON: ${(error as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new BadOptionError(path, "must hold a JSON object");
  const f = raw as Record<string, unknown>;
  if (f.format !== FIXTURE_FORMAT) throw new BadOptionError(`${path}: format`, `must be ${JSON.stringify(FIXTURE_FORMAT)}, got ${JSON.stringify(f.format)}`);
  if (typeof f.invariant !== "string" || !(f.invariant in INVARIANTS)) {
    throw new BadOptionError(`${path}: invariant`, `must be one of ${Object.keys(INVARIANTS).join(", ")}, got ${JSON.stringify(f.invariant)}`);
  }
  if (typeof f.message !== "string") throw new BadOptionError(`${path}: message`, "must be a string");
  const found = f.found as Record<string, unknown> | undefined;
  if (typeof found !== "object" || found === null || typeof found.seed !== "number") throw new BadOptionError(`${path}: found`, "must be an object with a numeric seed");
  const c = f.case as Record<string, unknown> | undefined;
  if (typeof c !== "object" || c === null || typeof c.scenario !== "object" || c.scenario === null) {
    throw new BadOptionError(`${path}: case`, "must be an object with a scenario");
  }
  if (f.known !== undefined && typeof f.known !== "string") throw new BadOptionError(`${path}: known`, "must be a string");
  if (c.restartAt !== undefined && typeof c.restartAt !== "number") throw new BadOptionError(`${path}: case.restartAt`, "must be a number");
  return raw as DstFixture;
}

/** Whether a fixture's replay is as expected: every invariant holds, or a known problem still shows. */
export function judgeFixture(fixture: DstFixture, violations: readonly Violation[]): { ok: boolean; detail: string } {
  if (fixture.known === undefined) {
    return violations.length === 0
      ? { ok: true, detail: "holds" }
      : { ok: false, detail: `regressed: ${violations.map((v) => `${v.invariant}: ${v.message}`).join("; ")}` };
  }
  return violations.some((v) => v.invariant === fixture.invariant)
    ? { ok: true, detail: "known problem still shows" }
    : { ok: false, detail: `the known problem no longer shows: remove "known" from the fixture if it is fixed (now: ${violations.length === 0 ? "every invariant holds" : violations.map((v) => v.invariant).join(", ")})` };
}

/**
 * A fixture's line in a verify summary. `holds`: every invariant held on the replay (false
 * for a known, unfixed problem: a bug, not a pass). `asExpected`: the outcome is what the
 * file says (judgeFixture). `known`: why a problem is marked known.
 */
export interface FixtureReport {
  invariant: InvariantId;
  holds: boolean;
  asExpected: boolean;
  known?: string;
  detail: string;
}

export function fixtureReport(fixture: DstFixture, violations: readonly Violation[]): FixtureReport {
  const { ok, detail } = judgeFixture(fixture, violations);
  return { invariant: fixture.invariant, holds: violations.length === 0, asExpected: ok, ...(fixture.known !== undefined ? { known: fixture.known } : {}), detail };
}

function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
}
