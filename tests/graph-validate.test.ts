import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CycleError, GraphError, UnknownDependencyError } from "../machines/errors.js";
import { validateGraph } from "../machines/graph/index.js";
import { thrown } from "./errors-helpers.js";

const graph = (entries: Record<string, string[]>) => new Map(Object.entries(entries));
const nothingKnown = () => false;

describe("validateGraph", () => {
  it("accepts a sound graph, with dependencies on keys the scheduler already has", () => {
    const known = new Set(["old-1"]);
    expect(() => validateGraph(graph({ a: [], b: ["a", "old-1"], c: ["a", "b", "a"] }), (key) => known.has(key))).not.toThrow();
    expect(() => validateGraph(new Map(), nothingKnown)).not.toThrow();
  });

  it("asks about keys outside the graph only", () => {
    const asked: string[] = [];
    validateGraph(graph({ a: [], b: ["a", "x"] }), (key) => {
      asked.push(key);
      return true;
    });
    expect(asked).toEqual(["x"]);
  });

  it("reports a dependency that is neither in the graph nor known", () => {
    const error = thrown(() => validateGraph(graph({ a: [], b: ["a", "ghost"] }), nothingKnown));
    expect(error).toBeInstanceOf(UnknownDependencyError);
    expect(error).toMatchObject({ code: "UNKNOWN_DEPENDENCY", key: "b", dependency: "ghost", keys: ["b", "ghost"] });
    expect((error as Error).message).toBe("task b depends on unknown key ghost");
  });

  it("reports a two-task cycle with its path", () => {
    const error = thrown(() => validateGraph(graph({ a: ["b"], b: ["a"] }), nothingKnown));
    expect(error).toBeInstanceOf(CycleError);
    expect(error).toMatchObject({ code: "CYCLE", cycle: ["a", "b", "a"] });
    expect((error as Error).message).toBe("cycle in graph: a -> b -> a");
  });

  it("reports only the cycle, not the path that led to it", () => {
    const error = thrown(() => validateGraph(graph({ x: ["y"], y: ["a"], a: ["b"], b: ["c"], c: ["a"], z: [] }), nothingKnown));
    expect(error).toMatchObject({ cycle: ["a", "b", "c", "a"] });
  });

  it("finds a cycle whatever key the search starts from", () => {
    const error = thrown(() => validateGraph(graph({ c: ["a"], ok: [], b: ["c"], a: ["b"] }), nothingKnown));
    expect(error).toMatchObject({ cycle: ["c", "a", "b", "c"] });
  });

  it("calls a self-dependency a graph error, not a cycle", () => {
    const error = thrown(() => validateGraph(graph({ a: [], b: ["a", "b"] }), nothingKnown));
    expect(error).toBeInstanceOf(GraphError);
    expect(error).not.toBeInstanceOf(CycleError);
    expect(error).toMatchObject({ code: "GRAPH", keys: ["b"], message: "task b depends on itself" });
  });

  it("refuses empty keys and non-string keys", () => {
    expect(thrown(() => validateGraph(graph({ "": [] }), nothingKnown))).toMatchObject({ code: "GRAPH" });
    expect(thrown(() => validateGraph(graph({ a: [""] }), nothingKnown))).toMatchObject({ code: "GRAPH", keys: ["a"] });
    const bad = new Map<string, string[]>([["a", [7 as unknown as string]]]);
    expect(thrown(() => validateGraph(bad, nothingKnown))).toMatchObject({ code: "GRAPH", keys: ["a"] });
    const notArray = new Map<string, string[]>([["a", "b" as unknown as string[]]]);
    expect(thrown(() => validateGraph(notArray, nothingKnown))).toMatchObject({ code: "GRAPH", keys: ["a"] });
  });

  it("reports problems before cycles, in the graph's order", () => {
    const error = thrown(() => validateGraph(graph({ a: ["b"], b: ["a"], c: ["ghost"] }), nothingKnown));
    expect(error).toBeInstanceOf(UnknownDependencyError);
  });

  it("walks chains far longer than the call stack, and finds a cycle closing one", () => {
    const n = 200_000;
    const chain = new Map<string, string[]>([["t0", []]]);
    for (let i = 1; i < n; i++) chain.set(`t${i}`, [`t${i - 1}`]);
    expect(() => validateGraph(chain, nothingKnown)).not.toThrow();
    chain.set("t0", [`t${n - 1}`]);
    const error = thrown(() => validateGraph(chain, nothingKnown)) as CycleError;
    expect(error).toBeInstanceOf(CycleError);
    expect(error.cycle).toHaveLength(n + 1);
    expect(error.cycle.slice(0, 3)).toEqual(["t0", `t${n - 1}`, `t${n - 2}`]);
    expect(error.cycle.at(-1)).toBe("t0");
  });

  it("names a real cycle whenever it reports one, and reports one whenever there is one", () => {
    const randomGraph = fc.integer({ min: 1, max: 12 }).chain((n) =>
      fc.array(fc.array(fc.integer({ min: 0, max: n - 1 }), { maxLength: 3 }), { minLength: n, maxLength: n }),
    );
    fc.assert(
      fc.property(randomGraph, (lists) => {
        const tasks = new Map(lists.map((deps, i) => [`k${i}`, deps.filter((d) => d !== i).map((d) => `k${d}`)]));
        const error = (() => {
          try {
            validateGraph(tasks, nothingKnown);
            return undefined;
          } catch (caught) {
            return caught;
          }
        })();
        if (error === undefined) {
          expect(hasCycle(tasks)).toBe(false);
          return;
        }
        expect(error).toBeInstanceOf(CycleError);
        const cycle = (error as CycleError).cycle;
        expect(cycle[0]).toBe(cycle.at(-1));
        expect(new Set(cycle.slice(1)).size).toBe(cycle.length - 1);
        for (let i = 0; i + 1 < cycle.length; i++) expect(tasks.get(cycle[i]!)).toContain(cycle[i + 1]);
      }),
    );
  });
});

/** Kahn's algorithm, as an independent check. */
function hasCycle(tasks: Map<string, string[]>): boolean {
  const waiting = new Map([...tasks].map(([key, deps]) => [key, new Set(deps).size]));
  const ready = [...waiting].filter(([, count]) => count === 0).map(([key]) => key);
  let done = 0;
  while (ready.length > 0) {
    const key = ready.pop()!;
    done++;
    for (const [other, deps] of tasks) {
      if (!new Set(deps).has(key)) continue;
      const left = waiting.get(other)! - 1;
      waiting.set(other, left);
      if (left === 0) ready.push(other);
    }
  }
  return done < tasks.size;
}
