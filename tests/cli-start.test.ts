/**
 * The CLI imports a command's modules only when that command runs (cli/run.ts), so
 * `natsched --help` loads the CLI's dispatch alone and `inspect`, `story` and `keys` load
 * the log reading they need, not NATS, the hosts, the simulator or the dashboard server.
 * Checked on the static import graph of the sources: what Node loads before any code runs.
 * An `import type` loads nothing; any other import loads its module (verbatimModuleSyntax
 * keeps `import { type X }` as an import); `import()` loads only when called.
 */
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The specifiers `file` loads before it runs: its static imports and re-exports, less `import type`/`export type`. */
function staticImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), "utf8"), ts.ScriptTarget.ES2022);
  const specs: string[] = [];
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && !statement.importClause?.isTypeOnly) specs.push((statement.moduleSpecifier as ts.StringLiteral).text);
    if (ts.isExportDeclaration(statement) && statement.moduleSpecifier !== undefined && !statement.isTypeOnly) specs.push((statement.moduleSpecifier as ts.StringLiteral).text);
  }
  return specs;
}

/** Every repository file and package `entry` loads before it runs. */
function loadedBy(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const spec of staticImports(file)) {
      if (spec.startsWith("node:")) continue;
      if (!spec.startsWith(".")) {
        packages.add(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!);
        continue;
      }
      const path = relative(ROOT, join(ROOT, dirname(file), spec)).split(sep).join("/");
      pending.push(path.endsWith(".js") ? `${path.slice(0, -3)}.ts` : path);
    }
  }
  return { files, packages };
}

describe("the CLI's start", () => {
  it("dispatches without loading any command: natsched --help loads cli/ dispatch and no package", () => {
    const { files, packages } = loadedBy("cli/main.ts");
    expect([...packages]).toEqual([]);
    const commands = [...files].filter((f) => f.startsWith("cli/") && !["cli/main.ts", "cli/run.ts", "cli/secret-args.ts"].includes(f));
    expect(commands).toEqual([]);
    expect([...files].filter((f) => /^(tools|replay|actors|sim|dashboard)\//.test(f))).toEqual([]);
  });

  it.each(["cli/inspect.ts", "cli/story.ts", "cli/keys.ts", "cli/log-index.ts", "cli/log-info.ts"])("%s loads neither NATS nor the hosts, the simulator or the dashboard", (command) => {
    const { files, packages } = loadedBy(command);
    expect([...packages].filter((p) => p !== "xstate")).toEqual([]);
    expect([...files].filter((f) => /^(actors|sim|dashboard)\/|^transport\/nats/.test(f))).toEqual([]);
    // A file of another command would mean the dispatch's laziness is undone from inside.
    expect([...files].filter((f) => f.startsWith("cli/") && ["cli/run.ts", "cli/dashboard.ts", "cli/scheduler.ts", "cli/worker.ts", "cli/simulate.ts"].includes(f))).toEqual([]);
  });
});
