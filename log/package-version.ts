import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** natsched's version from package.json, found from here in the source tree and in dist/ alike. */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "natsched" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // not here: look one directory up
    }
    dir = dirname(dir);
  }
  return "0.0.0";
}

/** What every new log's header meta records of the build that writes it (a caller's meta may override). */
export function writerMeta(): { natsched: string; node: string } {
  return { natsched: packageVersion(), node: process.version };
}
