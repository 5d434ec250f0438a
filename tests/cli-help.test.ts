/** Every command answers --help and -h with its usage and exit 0, and a bad flag with exit 2; natsched --version. */
import { describe, expect, it } from "vitest";
import { runCli } from "../cli/run.js";
import { packageVersion } from "../log/package-version.js";

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (t) => out.push(t), err: (t) => err.push(t) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

const COMMANDS = [["story"], ["export"], ["inspect"], ["keys"], ["replay"], ["log"], ["log", "export"], ["log", "index"], ["simulate"], ["what-if"], ["scheduler"], ["worker"], ["status"], ["dashboard"]];

describe("natsched CLI: help, bad flags, version", () => {
  for (const command of COMMANDS) {
    it(`${command.join(" ")}: --help and -h print its usage with exit 0; an unknown flag is exit 2`, async () => {
      for (const flag of ["--help", "-h"]) {
        const r = await cli([...command, flag]);
        expect(r.code, `${command.join(" ")} ${flag}`).toBe(0);
        expect(r.out).toMatch(new RegExp(`^usage: natsched ${command.join(" ")}\\b`));
      }
      const bad = await cli([...command, "--no-such-flag"]);
      expect(bad.code).toBe(2);
      expect(bad.err).toContain("--no-such-flag");
    });
  }

  it("prints the version for --version, -V and version", async () => {
    for (const flag of ["--version", "-V", "version"]) expect(await cli([flag])).toEqual({ code: 0, out: packageVersion(), err: "" });
  });

  it("says an unknown command is unknown, with exit 2, and lists the commands", async () => {
    const r = await cli(["frobnicate"]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('unknown command "frobnicate"');
    expect(r.err).toContain("--version");
  });
});
