/**
 * The programs outside Node that some tests need (tests/support/outside-programs.ts): each one
 * present is found where the tests look for it and runs; each one missing shows here as a
 * skipped test naming the command that installs it (its test files were left out by
 * vitest.config.ts), or fails when NATSCHED_REQUIRE_PROGRAMS=1 (CI).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
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

describe("python3", () => {
  /** OUTSIDE_PROGRAMS' python3 as found with only a fake `python3` on PATH, which fails `-c <code>` when the code imports venv and `venvWorks` is false. */
  function findWithFake(venvWorks: boolean): string | undefined {
    const dir = mkdtempSync(join(tmpdir(), "natsched-fake-python-"));
    const saved = { PATH: process.env.PATH, NATSCHED_PYTHON: process.env.NATSCHED_PYTHON };
    try {
      writeFileSync(join(dir, "python3"), `#!/bin/sh\ncase "$*" in *venv*) exit ${venvWorks ? 0 : 1};; esac\nexit 0\n`);
      chmodSync(join(dir, "python3"), 0o755);
      process.env.PATH = dir;
      delete process.env.NATSCHED_PYTHON;
      return OUTSIDE_PROGRAMS.find((p) => p.name === "python3")!.find();
    } finally {
      process.env.PATH = saved.PATH;
      if (saved.NATSCHED_PYTHON !== undefined) process.env.NATSCHED_PYTHON = saved.NATSCHED_PYTHON;
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it("counts a python3 that cannot make a venv (no python3-venv) as missing, so its test is left out rather than failing", () => {
    expect(findWithFake(false)).toBeUndefined();
    const pretended = (process.env.NATSCHED_TEST_WITHOUT ?? "").split(",").includes("python3");
    expect(findWithFake(true)).toBe(pretended ? undefined : "python3");
  });
});
