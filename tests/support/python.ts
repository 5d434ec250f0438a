/**
 * A Python with nats-py for the tests of examples/python_client.py: `NATSCHED_PYTHON`, else
 * the repository's `.venv-test/bin/python`, made (and nats-py installed into it) when missing,
 * as `.ci/run` does. Throws, saying the command that installs it, when neither works.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
export const REPO_ROOT = join(import.meta.dirname, "..", "..");
const VENV = join(REPO_ROOT, ".venv-test");
export const INSTALL_COMMAND = "python3 -m venv .venv-test && .venv-test/bin/pip install nats-py";

async function importsNats(python: string): Promise<boolean> {
  return run(python, ["-c", "import nats"]).then(
    () => true,
    () => false,
  );
}

export interface PythonChoice {
  /** Default: process.env.NATSCHED_PYTHON. */
  chosen?: string | undefined;
  /** The venv to use or make. Default: the repository's `.venv-test`. */
  venv?: string;
  /** The Python that makes the venv. Default: `python3` on PATH. */
  python3?: string;
}

export async function pythonWithNats({ chosen = process.env.NATSCHED_PYTHON, venv = VENV, python3 = "python3" }: PythonChoice = {}): Promise<string> {
  if (chosen) {
    if (await importsNats(chosen)) return chosen;
    throw new Error(`NATSCHED_PYTHON=${chosen} cannot import nats: install it with \`${chosen} -m pip install nats-py\``);
  }
  const python = join(venv, "bin", "python");
  try {
    if (!existsSync(python)) await run(python3, ["-m", "venv", venv], { cwd: REPO_ROOT });
    if (!(await importsNats(python))) await run(join(venv, "bin", "pip"), ["install", "--quiet", "nats-py"], { cwd: REPO_ROOT });
  } catch (error) {
    throw new Error(`no Python with nats-py for this test (${(error as Error).message.split("\n")[0]}): run \`${INSTALL_COMMAND}\` at the repository's root, or set NATSCHED_PYTHON`);
  }
  if (await importsNats(python)) return python;
  throw new Error(`${python} cannot import nats: run \`${INSTALL_COMMAND}\` at the repository's root, or set NATSCHED_PYTHON`);
}
