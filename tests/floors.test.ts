/**
 * The floors of the code (README, "How it is built"): a file imports only files of its own
 * room or of a floor below. Every import counts: static `import`/`export ... from`, `import()`
 * (and `typeof import()` in types), and a file URL a worker thread is started from
 * (`new URL("./x.js", import.meta.url)`). machines/ is pure, so it imports no Node module.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Each room and its floor, the most specific path first. actors/ and sim/ are both hosts:
 * on one floor, and neither imports the other; what they share is the host kit, actors/host/,
 * a floor below both.
 */
const ROOMS: ReadonlyArray<{ room: string; floor: number }> = [
  { room: "machines", floor: 0 },
  { room: "transport", floor: 1 },
  { room: "log", floor: 2 },
  { room: "replay", floor: 3 },
  { room: "actors/host", floor: 3.5 },
  { room: "actors", floor: 4 },
  { room: "sim", floor: 4 },
  { room: "tools", floor: 5 },
  // The dashboard's server reads logs with the tools; its page (browser code) may take the server's types.
  { room: "dashboard/server", floor: 5.5 },
  { room: "dashboard/page", floor: 5.6 },
  { room: "cli", floor: 6 },
  { room: "index.ts", floor: 7 },
  { room: "sim.ts", floor: 7 },
  { room: "examples", floor: 8 },
];

/** Packages machines/ may import: its definitions are XState machines. */
const PURE_PACKAGES = new Set(["xstate", "immer"]);

interface Import {
  /** The importing file, relative to the repository with `/` separators. */
  file: string;
  /** The module specifier as written. */
  spec: string;
}

/** A room as a message names it: `log/`, or an entry point's file name. */
const shown = (room: string): string => (room.endsWith(".ts") ? room : `${room}/`);

function roomOf(file: string): { room: string; floor: number } | undefined {
  return ROOMS.find(({ room }) => file === room || file.startsWith(`${room}/`));
}

/** The repository file a relative specifier names (`.js` written for a `.ts` source, a folder for its index.ts). */
function target(file: string, spec: string): string {
  let path = join(dirname(file), spec).split(sep).join("/");
  if (path.endsWith(".js")) path = `${path.slice(0, -3)}.ts`;
  else if (!path.endsWith(".ts") && !path.endsWith(".json")) path = `${path}/index.ts`;
  return path;
}

/** What is wrong with each import: an import up a floor, across the two hosts, or I/O in machines/. */
export function floorViolations(imports: readonly Import[]): string[] {
  const found: string[] = [];
  for (const { file, spec } of imports) {
    const from = roomOf(file);
    if (from === undefined) {
      found.push(`${file} is in no room: give its folder a floor in tests/floors.test.ts`);
      continue;
    }
    if (!spec.startsWith(".")) {
      const pkg = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!;
      if (from.room === "machines" && !PURE_PACKAGES.has(pkg)) found.push(`${file} imports "${spec}": machines/ is pure (no I/O), it imports only ${[...PURE_PACKAGES].join(", ")}`);
      continue;
    }
    const path = target(file, spec);
    const to = roomOf(path);
    if (to === undefined) found.push(`${file} imports "${spec}" (${path}), which is in no room`);
    else if (to.room === from.room) continue;
    else if (to.floor > from.floor) found.push(`${file} (${shown(from.room)}, floor ${from.floor}) imports "${spec}" (${shown(to.room)}, floor ${to.floor}): up a floor`);
    else if (to.floor === from.floor) found.push(`${file} (${shown(from.room)}) imports "${spec}" (${shown(to.room)}): two rooms of one floor do not import each other`);
  }
  return found;
}

/** Every module specifier `source` names, as the compiler reads it. */
export function importsOf(file: string, source: string): Import[] {
  const specs: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      specs.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg !== undefined && ts.isStringLiteralLike(arg)) specs.push(arg.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      specs.push(node.argument.literal.text);
    } else if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "URL" && node.arguments?.length === 2 && node.arguments[1]!.getText() === "import.meta.url") {
      // The URL's path, or each path it may be: `cond ? "./x.ts" : "./x.js"` names one file twice.
      const paths = (n: ts.Expression): void => {
        if (ts.isStringLiteralLike(n)) specs.push(n.text);
        else if (ts.isConditionalExpression(n)) [n.whenTrue, n.whenFalse].forEach(paths);
        else if (ts.isParenthesizedExpression(n)) paths(n.expression);
      };
      paths(node.arguments[0]!);
    }
    node.forEachChild(visit);
  };
  visit(ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true));
  return specs.map((spec) => ({ file, spec }));
}

function sourceFiles(path: string): string[] {
  const full = join(ROOT, path);
  if (!statSync(full).isDirectory()) return path.endsWith(".ts") ? [path] : [];
  return readdirSync(full).flatMap((name) => sourceFiles(`${path}/${name}`));
}

/** The package's sources: what tsconfig.json compiles. */
function packageFiles(): string[] {
  const config = JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8")) as { include: string[] };
  return config.include.flatMap((path) => sourceFiles(path));
}

describe("floors", () => {
  it("no file of the package imports up a floor, or across the two hosts", () => {
    const files = packageFiles();
    expect(files.length).toBeGreaterThan(200);
    const imports = files.flatMap((file) => importsOf(file, readFileSync(join(ROOT, file), "utf8")));
    expect(floorViolations(imports)).toEqual([]);
  });

  it("every relative import names a file that exists (so none escapes the check by its spelling)", () => {
    const missing = packageFiles()
      .flatMap((file) => importsOf(file, readFileSync(join(ROOT, file), "utf8")))
      .filter(({ spec }) => spec.startsWith("."))
      .filter(({ file, spec }) => !existsSync(join(ROOT, target(file, spec))))
      .map(({ file, spec }) => `${file}: ${spec}`);
    expect(missing).toEqual([]);
  });

  it("every room of tsconfig.json has a floor", () => {
    const config = JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8")) as { include: string[] };
    expect(config.include.filter((path) => roomOf(path) === undefined)).toEqual([]);
  });
});

describe("the check itself", () => {
  const of = (file: string, ...specs: string[]) => floorViolations(specs.map((spec) => ({ file, spec })));

  it("names the file and the import that goes up a floor", () => {
    expect(of("log/reader.ts", "../replay/replay.js")).toEqual([`log/reader.ts (log/, floor 2) imports "../replay/replay.js" (replay/, floor 3): up a floor`]);
    expect(of("machines/scheduler/core.ts", "../../transport/subjects.js")).toHaveLength(1);
    expect(of("tools/what-if.ts", "../cli/what-if.js")).toHaveLength(1);
    expect(of("actors/host/recorder.ts", "../scheduler-actor.js")).toHaveLength(1);
    expect(of("cli/story.ts", "../index.js")).toHaveLength(1);
    expect(of("index.ts", "./sim.js")).toEqual([`index.ts (index.ts) imports "./sim.js" (sim.ts): two rooms of one floor do not import each other`]);
  });

  it("lets a file import its own room and every floor below", () => {
    expect(of("tools/what-if.ts", "../sim/simulator.js", "../actors/client.js", "../replay/replay.js", "../log/reader.js", "./what-if-metrics.js", "../machines/config.js", "xstate")).toEqual([]);
    expect(of("sim/sim-scheduler.ts", "../actors/host/recorder.js", "../transport/subjects.js")).toEqual([]);
    expect(of("index.ts", "./cli/main.js", "./tools/export.js", "./sim/simulator.js")).toEqual([]);
    expect(of("machines/graph/order.ts", "../util/heap.js", "../../machines/config.js")).toEqual([]);
  });

  it("keeps the two hosts apart", () => {
    expect(of("sim/sim-scheduler.ts", "../actors/scheduler-actor.js")).toEqual([`sim/sim-scheduler.ts (sim/) imports "../actors/scheduler-actor.js" (actors/): two rooms of one floor do not import each other`]);
    expect(of("actors/local-cluster.ts", "../sim/kernel.js")).toHaveLength(1);
  });

  it("keeps machines/ free of Node modules and other packages", () => {
    expect(of("machines/config.ts", "@nats-io/nats-core")).toHaveLength(1);
    expect(of("machines/compile.ts", "xstate")).toEqual([]);
    expect(floorViolations(importsOf("machines/x.ts", `import { readFileSync } from "node:fs";`))).toHaveLength(1);
    expect(floorViolations(importsOf("log/x.ts", `import { readFileSync } from "node:fs";`))).toEqual([]);
  });

  it("flags a file in no room, and an import of one", () => {
    expect(of("scratch/x.ts", "../log/types.js")).toEqual(["scratch/x.ts is in no room: give its folder a floor in tests/floors.test.ts"]);
    expect(of("log/x.ts", "../scratch/y.js")).toHaveLength(1);
  });

  it("reads every kind of import", () => {
    const source = [
      `import { a } from "./static.js";`,
      `import type { B } from "./type-only.js";`,
      `import "./side-effect.js";`,
      `export { c } from "./re-export.js";`,
      `export * from "./star.js";`,
      `const m = await import("./dynamic.js");`,
      `let t: typeof import("./type-query.js");`,
      `const w = new URL(import.meta.url.endsWith(".ts") ? "./thread.ts" : "./thread.js", import.meta.url);`,
      `const u = new URL("./data.json", "https://example.com/");`,
      `// import { d } from "./in-a-comment.js";`,
      `const s = "import('./in-a-string.js')";`,
    ].join("\n");
    expect(importsOf("log/x.ts", source).map(({ spec }) => spec)).toEqual([
      "./static.js",
      "./type-only.js",
      "./side-effect.js",
      "./re-export.js",
      "./star.js",
      "./dynamic.js",
      "./type-query.js",
      "./thread.ts",
      "./thread.js",
    ]);
  });

  it("finds the imports of a file that goes up, read from source", () => {
    const source = `import { replay } from "../replay/replay.js";\nexport const x = () => import("../tools/story.js");`;
    expect(floorViolations(importsOf("log/bad.ts", source))).toHaveLength(2);
  });
});
