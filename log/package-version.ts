import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gitCommitAt } from "./git-commit.js";

/** natsched's package root (the directory of its package.json), found from here in the source tree and in dist/ alike. */
function packageRoot(): { dir: string; version: string } | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "natsched" && typeof pkg.version === "string") return { dir, version: pkg.version };
    } catch {
      // not here: look one directory up
    }
    dir = dirname(dir);
  }
  return undefined;
}

let root: { dir: string; version: string } | undefined | null = null;
let commit: string | undefined | null = null;

function cachedRoot(): { dir: string; version: string } | undefined {
  if (root === null) root = packageRoot();
  return root;
}

/** natsched's version from package.json. */
export function packageVersion(): string {
  return cachedRoot()?.version ?? "0.0.0";
}

/** The git commit natsched runs from, when it runs from a checkout (an installed package has none). */
export function packageCommit(): string | undefined {
  if (commit === null) {
    const dir = cachedRoot()?.dir;
    commit = dir === undefined ? undefined : gitCommitAt(dir);
  }
  return commit;
}

/** What every new log's header meta records of the build that writes it (a caller's meta may override). */
export function writerMeta(): { natsched: string; commit?: string; node: string } {
  const at = packageCommit();
  return { natsched: packageVersion(), ...(at !== undefined ? { commit: at } : {}), node: process.version };
}
