/**
 * The programs outside Node that some tests need, how to find each and the one command that
 * installs it. vitest.config.ts leaves out the test files of a missing program (and says so)
 * unless NATSCHED_REQUIRE_PROGRAMS=1 (set by .ci/run), so `npm test` passes on a machine with
 * Node alone while CI always runs everything; tests/outside-programs.test.ts reports each one
 * missing as a skipped test that names the install command.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface OutsideProgram {
  name: string;
  /** The command that installs it (Debian, as CI does). */
  install: string;
  /** Where the tests look for it: a runnable path, or undefined when it is not there. */
  find(): string | undefined;
  /** A test or support file needs it when its text matches (imports of the support module that starts it). */
  neededBy: RegExp;
}

function runs(command: string, args: string[]): boolean {
  return spawnSync(command, args, { stdio: "ignore" }).status === 0;
}

function firstRunnable(candidates: (string | undefined)[], args: string[]): string | undefined {
  for (const c of candidates) {
    if (!c) continue;
    if (c.includes("/") ? existsSync(c) && runs(c, args) : runs(c, args)) return c;
  }
  return undefined;
}

/** NATSCHED_TEST_WITHOUT=a,b: behave as on a machine without those programs (to try the suite as a newcomer runs it). */
const pretendMissing = new Set((process.env.NATSCHED_TEST_WITHOUT ?? "").split(",").filter(Boolean));

export const OUTSIDE_PROGRAMS: readonly OutsideProgram[] = [
  {
    name: "nats-server",
    install: "apt-get install -y nats-server",
    find: () => (pretendMissing.has("nats-server") ? undefined : firstRunnable([process.env.NATS_SERVER_BIN, "nats-server", "/usr/sbin/nats-server", "/usr/local/bin/nats-server"], ["--version"])),
    neededBy: /from "\.\/(support\/)?nats-server\.js"/,
  },
  {
    // The test makes its venv with nats-py (tests/support/python.ts) from this python3, so a
    // python3 without venv (Debian's, before python3-venv) counts as missing; NATSCHED_PYTHON
    // is used as it is, so it must have nats-py already.
    name: "python3",
    install: "apt-get install -y python3 python3-venv",
    find: () =>
      pretendMissing.has("python3")
        ? undefined
        : (firstRunnable([process.env.NATSCHED_PYTHON], ["-c", "import nats"]) ?? firstRunnable(["python3"], ["-c", "import venv, ensurepip"])),
    neededBy: /from "\.\/(support\/)?python\.js"/,
  },
  {
    // The dashboard's browser tests drive it with playwright-core (tests/support/browser.ts).
    name: "chromium",
    install: "apt-get install -y chromium",
    find: () => (pretendMissing.has("chromium") ? undefined : firstRunnable([process.env.NATSCHED_CHROMIUM, "/usr/bin/chromium", "chromium"], ["--version"])),
    neededBy: /from "\.\/(support\/)?(browser|widget-page)\.js"/,
  },
];

/** Test files (relative to the repository root) that need `program`, following imports through tests/support. */
export function filesNeeding(root: string, program: OutsideProgram): string[] {
  const supportDir = join(root, "tests", "support");
  const support = readdirSync(supportDir).filter((f) => f.endsWith(".ts"));
  const needing = new Set<string>();
  // Support modules that need it, directly or through another support module.
  for (let grew = true; grew; ) {
    grew = false;
    for (const f of support) {
      if (needing.has(f)) continue;
      const text = readFileSync(join(supportDir, f), "utf8");
      const viaOther = [...needing].some((n) => text.includes(`from "./${n.replace(/\.ts$/, ".js")}"`));
      if (program.neededBy.test(text) || viaOther || f === `${program.name}.ts`) {
        needing.add(f);
        grew = true;
      }
    }
  }
  const testsDir = join(root, "tests");
  return readdirSync(testsDir)
    .filter((f) => f.endsWith(".test.ts"))
    .filter((f) => {
      const text = readFileSync(join(testsDir, f), "utf8");
      return program.neededBy.test(text) || [...needing].some((n) => text.includes(`from "./support/${n.replace(/\.ts$/, ".js")}"`));
    })
    .map((f) => `tests/${f}`);
}

/** True when missing programs must fail their tests instead of leaving them out (CI). */
export function programsRequired(): boolean {
  return process.env.NATSCHED_REQUIRE_PROGRAMS === "1";
}
