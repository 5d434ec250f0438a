/** appendOp: what one actor sends one destination in one turn (Outbox and simulator alike). */
import { describe, expect, it } from "vitest";
import { appendOp } from "../actors/host/op-batch.js";

const free = (keys: string[], attempt?: number, run?: number) => ({ op: "free-keys" as const, keys, ...(run !== undefined ? { run } : {}), ...(attempt !== undefined ? { attempt } : {}) });

describe("appendOp", () => {
  it("joins consecutive free-keys with the same run and attempt, in order", () => {
    const ops: unknown[] = [];
    for (const key of ["a", "b", "c"]) appendOp(ops, free([key], 7, 1));
    expect(ops).toEqual([free(["a", "b", "c"], 7, 1)]);
  });

  it("keeps free-keys with another stamp, and anything in between, as separate ops", () => {
    const ops: unknown[] = [];
    appendOp(ops, free(["a"], 7, 1));
    appendOp(ops, free(["b"], 8, 1));
    appendOp(ops, { op: "compute-task", key: "x" });
    appendOp(ops, free(["c"], 8, 1));
    appendOp(ops, free(["d"], 8, 2));
    expect(ops).toEqual([free(["a"], 7, 1), free(["b"], 8, 1), { op: "compute-task", key: "x" }, free(["c"], 8, 1), free(["d"], 8, 2)]);
  });

  it("joins unstamped free-keys too, but never an unstamped one with a stamped one", () => {
    const ops: unknown[] = [];
    appendOp(ops, free(["a"]));
    appendOp(ops, free(["b"]));
    appendOp(ops, free(["c"], 3, 1));
    expect(ops).toEqual([free(["a", "b"]), free(["c"], 3, 1)]);
  });

  it("never changes the ops or key arrays it was given", () => {
    const first = free(["a"], 1, 1);
    const second = free(["b", "c"], 1, 1);
    const ops: unknown[] = [];
    appendOp(ops, first);
    appendOp(ops, second);
    appendOp(ops, free(["d"], 1, 1));
    expect(first).toEqual(free(["a"], 1, 1));
    expect(second).toEqual(free(["b", "c"], 1, 1));
    expect(ops).toEqual([free(["a", "b", "c", "d"], 1, 1)]);
  });
});
