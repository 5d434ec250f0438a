/**
 * The log header names the build that wrote it (natsched version, git commit, node, a code
 * hash per task function), and replay warns, never fails, when the replaying build differs.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { functionHashes, hashFunctions } from "../actors/function-hashes.js";
import { LocalCluster } from "../actors/local-cluster.js";
import { runCli } from "../cli/run.js";
import { codeHash, combinedHash, functionsMeta, MAX_LISTED_FUNCTIONS } from "../log/code-hash.js";
import { decodeHeaderLine, encodeHeaderLine } from "../log/codec.js";
import { gitCommitAt } from "../log/git-commit.js";
import { readLogSync } from "../log/reader.js";
import { replay } from "../replay/replay.js";
import { functions } from "./replay-fixtures.js";

const MODULE = "tests/support/cpu-tasks.mjs";
const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "natsched-build-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const path = join(dir, "small.natlog");

beforeAll(async () => {
  const cluster = await LocalCluster.start({ workers: 1, functions: [functions, MODULE], log: { path }, configFile: false });
  await cluster.client().submit<number>("inc", [1]).result();
  await cluster.close();
}, 30_000);

/** A copy of the log whose header meta is changed by `edit`, with the header's checksum written again. */
function forged(edit: (meta: Record<string, unknown>) => void): string {
  const data = readFileSync(path);
  const end = data.indexOf(0x0a);
  const decoded = decodeHeaderLine(data.toString("utf8", 0, end));
  if (!decoded.ok) throw new Error(decoded.message);
  edit(decoded.header.meta);
  const copy = join(dir, `forged-${Math.random().toString(16).slice(2)}.natlog`);
  writeFileSync(copy, Buffer.concat([Buffer.from(encodeHeaderLine(decoded.header), "utf8"), data.subarray(end + 1)]));
  return copy;
}

describe("the header names the build", () => {
  it("records the commit of this checkout and a hash of each registered function's code", () => {
    const meta = readLogSync(path).header.meta;
    const commit = gitCommitAt(root);
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    expect(meta.commit).toBe(commit);
    const listed = meta.functions as Record<string, string>;
    // A function given as an object: its source text; from a module: the module file's bytes.
    expect(listed.inc).toBe(codeHash(functions.inc.toString()));
    expect(listed.spin).toBe(codeHash(readFileSync(join(root, MODULE))));
    expect(listed.spinUntil).toBe(listed.spin);
    expect(Object.keys(listed)).toContain("boom");
  });

  it("is named by natsched log", async () => {
    const out: string[] = [];
    expect(await runCli(["log", path], { out: (t) => out.push(t), err: () => undefined })).toBe(0);
    expect(out[0]).toBe(`${path}: format v2, written by natsched ${String(readLogSync(path).header.meta.natsched)} (commit ${gitCommitAt(root)!.slice(0, 12)}) on node ${process.version}`);
  });

  it("is omitted without a checkout, and many functions are one digest", () => {
    expect(gitCommitAt(dir)).toBeUndefined();
    const many = Object.fromEntries(Array.from({ length: MAX_LISTED_FUNCTIONS + 1 }, (_, i) => [`f${i}`, codeHash(String(i))]));
    const meta = functionsMeta(many);
    expect(meta).toEqual({ functionsDigest: { count: MAX_LISTED_FUNCTIONS + 1, combined: combinedHash(many) } });
    expect(JSON.stringify(meta).length).toBeLessThan(100);
  });
});

describe("replay of a log written by another build", () => {
  it("finds no difference with the build that wrote it", async () => {
    const result = await replay(path, { functions: await hashFunctions([functions, MODULE]) });
    expect(result.ok).toBe(true);
    expect(result.buildDifferences).toEqual([]);
  });

  it("lists the version, commit, node major and changed functions, and still verifies", async () => {
    const copy = forged((meta) => {
      meta.natsched = "0.0.1-forged";
      meta.commit = "f".repeat(40);
      meta.node = "v4.0.0";
      (meta.functions as Record<string, string>).inc = "0123456789abcdef";
    });
    const mine = functionHashes({ functions, modules: new Map() });
    const result = await replay(copy, { functions: mine });
    expect(result.ok).toBe(true);
    const differences = result.buildDifferences!;
    expect(differences.slice(0, 3)).toEqual([
      { what: "natsched", recorded: "0.0.1-forged", replaying: expect.any(String) },
      { what: "commit", recorded: "f".repeat(40), replaying: gitCommitAt(root) },
      { what: "node", recorded: "v4.0.0", replaying: process.version },
    ]);
    const changed = differences.filter((d) => d.what === "function");
    expect(changed).toContainEqual({ what: "function", name: "inc", recorded: "0123456789abcdef", replaying: codeHash(functions.inc.toString()) });
    // The module's functions were not given to this replay; slow and boom were, unchanged.
    expect(changed).toContainEqual({ what: "function", name: "spin", recorded: expect.any(String), replaying: undefined });
    expect(changed.map((d) => d.name)).not.toContain("slow");
    expect(changed.map((d) => d.name)).not.toContain("boom");
    // Without the replayer's functions, only the build is compared; a same-major node is no difference.
    const plain = await replay(forged((meta) => void (meta.node = process.version.replace(/\.\d+\.\d+$/, ".0.0"))));
    expect(plain.buildDifferences).toEqual([]);
  });

  it("natsched replay warns on stderr and exits 0", async () => {
    const copy = forged((meta) => {
      meta.natsched = "0.0.1-forged";
      (meta.functions as Record<string, string>).inc = "0123456789abcdef";
    });
    const err: string[] = [];
    const code = await runCli(["replay", copy, "--functions", MODULE], { out: () => undefined, err: (text) => err.push(text) });
    expect(code).toBe(0);
    const warning = err.join("\n");
    expect(warning).toContain("warning: the log was written by another build: natsched 0.0.1-forged");
    expect(warning).toContain("function inc 0123456789abcdef (replaying: not given)");
    // The module's functions were given and are the same: not named.
    expect(warning).not.toContain("function spin");
  });
});
