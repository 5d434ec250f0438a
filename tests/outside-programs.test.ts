/**
 * The programs outside Node that some tests need (tests/support/outside-programs.ts): each one
 * present is found where the tests look for it and runs; each one missing shows here as a
 * skipped test naming the command that installs it (its test files were left out by
 * vitest.config.ts), or fails when NATSCHED_REQUIRE_PROGRAMS=1 (CI).
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { filesNeeding, OUTSIDE_PROGRAMS, programsRequired } from "./support/outside-programs.js";

const ROOT = join(import.meta.dirname, "..");

describe("programs outside Node", () => {
  for (const program of OUTSIDE_PROGRAMS) {
    const found = program.find();
    const files = filesNeeding(ROOT, program);
    if (found === undefined && !programsRequired()) {
      it.skip(`${program.name} is missing: ${files.length} test files left out; install it with \`${program.install}\``, () => undefined);
      continue;
    }
    it(`${program.name} is installed and runs (${files.length} test files need it)`, () => {
      expect(found, `${program.name} not found; install it with \`${program.install}\``).toBeDefined();
      expect(spawnSync(found!, ["--version"]).status).toBe(0);
      expect(files.length).toBeGreaterThan(0);
    });
  }
});
