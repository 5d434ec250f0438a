/**
 * The package as a user gets it: `npm pack` (which builds dist/), installed into an empty
 * project, runs the README's first example and the `natsched` command, pulls one copy of the
 * NATS client, refuses `require` with a clear error, and ships source maps that resolve.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { transformSync } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "..");
let dir: string;
let project: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "natsched-pack-"));
  const packed = await run("npm", ["pack", "--pack-destination", dir, "--silent"], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  const tarball = join(dir, packed.stdout.trim().split("\n").pop()!);
  project = join(dir, "project");
  await run("mkdir", ["-p", project]);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "try-natsched", private: true, type: "module" }));
  await run("npm", ["install", tarball, "--no-audit", "--no-fund", "--prefer-offline", "--silent"], { cwd: project, maxBuffer: 64 * 1024 * 1024 });
}, 300_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The README's first TypeScript example ("Use it from code"), as JavaScript. */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Use it from code"));
  const ts = /```ts\n([\s\S]*?)```/.exec(section)![1]!;
  return transformSync(ts, { loader: "ts", format: "esm" }).code;
}

describe("the packed package, installed into an empty project", () => {
  it("runs the README's first example", async () => {
    writeFileSync(join(project, "example.mjs"), readmeExample());
    const { stdout } = await run(process.execPath, ["example.mjs"], { cwd: project });
    const lines = stdout.trim().split("\n");
    expect(lines[0]).toBe("12");
    expect(lines[1]).toBe("[ 2, 3, 4 ]");
    expect(lines[2]).toBe("42");
    expect(stdout).toContain("'sum-0': 4");
  }, 60_000);

  it("installs the natsched command: --version and --help answer with exit 0", async () => {
    const bin = join(project, "node_modules", ".bin", "natsched");
    const version = await run(bin, ["--version"], { cwd: project });
    expect(version.stdout.trim()).toBe(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version);
    const help = await run(bin, ["--help"], { cwd: project });
    expect(help.stdout).toContain("usage: natsched <command>");
  }, 60_000);

  it("ships the dashboard's page prebuilt (the package has no esbuild)", async () => {
    const page = join(project, "node_modules", "natsched", "dist", "dashboard", "page");
    expect(readFileSync(join(page, "app.js"), "utf8")).toContain("/api/summary");
    expect(readFileSync(join(page, "index.html"), "utf8")).toContain('src="app.js"');
    const help = await run(join(project, "node_modules", ".bin", "natsched"), ["dashboard", "--help"], { cwd: project });
    expect(help.stdout).toContain("usage: natsched dashboard");
  }, 60_000);

  it("pulls one copy of the NATS client", async () => {
    const { stdout } = await run("npm", ["ls", "@nats-io/nats-core", "--all", "--parseable"], { cwd: project });
    const copies = new Set(stdout.trim().split("\n").filter((p) => p.endsWith(join("@nats-io", "nats-core"))));
    expect([...copies]).toHaveLength(1);
  }, 60_000);

  it("answers require() with a clear error instead of ERR_PACKAGE_PATH_NOT_EXPORTED", async () => {
    const failed = await run(process.execPath, ["-e", 'require("natsched")'], { cwd: project }).then(
      () => null,
      (error: { stderr: string }) => error,
    );
    expect(failed?.stderr).toContain("ERR_NATSCHED_ESM_ONLY");
    expect(failed?.stderr).toContain('await import("natsched")');
  });

  it("ships source maps that carry their sources", () => {
    const map = JSON.parse(readFileSync(join(project, "node_modules", "natsched", "dist", "actors", "local-cluster.js.map"), "utf8")) as { sources: string[]; sourcesContent?: string[] };
    expect(map.sourcesContent?.[0]).toContain("class LocalCluster");
  });
});
