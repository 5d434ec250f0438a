/**
 * ClientCore driven directly: stimuli in, instructions out, no transport, no timers, no
 * Client. Each case feeds what a host would (the user's calls, the scheduler's answers and
 * reports, timers firing) and checks what the core asks for.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ClientCore } from "../machines/client/core.js";
import type { ClientInit, ClientInput, ClientInstruction, ClientStimulus } from "../machines/client/inputs.js";
import type { ClientToScheduler, TaskSpec } from "../machines/protocol.js";
import { CLIENT_INIT } from "./support/client-core-init.js";


class Harness {
  readonly core: ClientCore;
  t = 0;

  constructor(init: Partial<ClientInit> = {}) {
    this.core = new ClientCore({ ...CLIENT_INIT, ...init });
  }

  /** Feed `stimulus` at `at` (default: the time now) and return what the core asks for. */
  feed(stimulus: ClientStimulus, at = this.t): ClientInstruction[] {
    this.t = at;
    return [...this.core.handle({ ...stimulus, t: at } as ClientInput)];
  }

  /** Flush, and return the request it sends (its ops and id). */
  flush(at = this.t): { request: number; ops: readonly ClientToScheduler[]; timeout: number } {
    const out = this.feed({ op: "flush" }, at);
    const request = out.find((i) => i.do === "request");
    if (request === undefined || request.do !== "request") throw new Error(`no request in ${JSON.stringify(out)}`);
    return request;
  }

  /** Submit one task per key (with `deps`), each held by one future. */
  submit(tasks: { key: string; deps?: string[] }[], wants = tasks.map((t) => t.key)): ClientInstruction[] {
    this.feed({ op: "retain", keys: wants });
    return this.feed({ op: "submit", tasks: tasks.map((t) => spec(t.key, t.deps)), wants });
  }
}

function spec(key: string, deps: string[] = []): TaskSpec {
  return { key, func: "f", args: deps, deps };
}

/**
 * A client attached at 0 whose join was answered, then a second join (call 2) sent at 100 as
 * the scheduler died: the server handed it to the dead one, no answer will come.
 */
function attachedThenLost(init: Partial<ClientInit>): { h: Harness; lost: ReturnType<Harness["flush"]> } {
  const h = new Harness(init);
  h.feed({ op: "attach" }, 0);
  h.feed({ op: "join", call: 1 });
  const first = h.flush(0);
  h.feed({ op: "answered", request: first.request, replies: ok(2), attempt: 0 }, 5);
  h.feed({ op: "join", call: 2 });
  return { h, lost: h.flush(100) };
}

function ok(n: number): { ok: true }[] {
  return Array.from({ length: n }, () => ({ ok: true as const }));
}

function kinds(out: readonly ClientInstruction[]): string[] {
  return out.map((i) => i.do);
}

describe("joining", () => {
  it("joins in one request, starts heartbeats, and learns the scheduler's run", () => {
    const h = new Harness();
    expect(h.feed({ op: "attach" })).toEqual([{ do: "schedule-flush" }, { do: "set-timer", timer: { kind: "heartbeat" }, ms: 500, repeat: true }]);
    const join = h.flush();
    expect(join.ops).toEqual([{ op: "client-join", client: "c" }]);
    expect(h.feed({ op: "timer", timer: { kind: "heartbeat" } })).toEqual([{ do: "publish", ops: [{ op: "heartbeat-client", client: "c" }] }]);
    expect(h.feed({ op: "answered", request: join.request, replies: ok(1) })).toEqual([{ do: "query", query: 1, body: { op: "client-keys", client: "c", keys: [] } }]);
    expect(h.feed({ op: "client-keys", query: 1, answer: { known: [], run: 7 } })).toEqual([]);
    expect(h.core.run).toBe(7);
  });

  it("sends no heartbeats when their interval is infinite, and stops them when the transport closes", () => {
    expect(kinds(new Harness({ heartbeatEvery: Infinity }).feed({ op: "attach" }))).toEqual(["schedule-flush"]);
    const h = new Harness();
    h.feed({ op: "attach" });
    h.feed({ op: "transport-closed" });
    expect(h.feed({ op: "timer", timer: { kind: "heartbeat" } })).toEqual([{ do: "clear-timer", timer: { kind: "heartbeat" } }]);
    // Nothing is sent on a closed transport: the flush finds it so.
    expect(h.feed({ op: "flush" })).toEqual([]);
  });
});

describe("submitting and releasing", () => {
  it("batches what is queued until the flush: the releases first, then the calls in order", () => {
    const h = new Harness();
    expect(kinds(h.submit([{ key: "a" }]))).toEqual(["schedule-flush"]);
    expect(h.submit([{ key: "b" }])).toEqual([]); // a flush is already on its way
    const first = h.flush();
    expect(first.ops.map((op) => op.op)).toEqual(["update-graph", "update-graph"]);
    h.feed({ op: "answered", request: first.request, replies: ok(2) });
    expect(kinds(h.feed({ op: "release", keys: ["a"] }))).toEqual(["schedule-flush"]);
    h.submit([{ key: "c" }]);
    const second = h.flush();
    expect(second.ops).toEqual([
      { op: "release-keys", client: "c", keys: ["a"] },
      { op: "update-graph", client: "c", tasks: [spec("c")], wants: ["c"] },
    ]);
  });

  it("releases a key only when its last future goes, and not if it is held again before the flush", () => {
    const h = new Harness();
    h.submit([{ key: "a" }]);
    h.feed({ op: "retain", keys: ["a"] });
    h.flush();
    expect(h.feed({ op: "release", keys: ["a"] })).toEqual([]);
    expect(h.core.futures()).toEqual([{ key: "a", status: "pending", refs: 1, holders: [] }]);
    h.feed({ op: "wait", wait: 1, keys: ["a"] });
    expect(h.feed({ op: "release", keys: ["a"] })).toEqual([
      { do: "reject-wait", wait: 1, failure: { kind: "released", key: "a" } },
      { do: "schedule-flush" },
    ]);
    h.feed({ op: "retain", keys: ["a"] });
    // Held again before the flush: nothing to release (the request has nothing in it).
    expect(h.feed({ op: "flush" })).toEqual([]);
  });

  it("keeps the spec of a released dependency while a kept spec needs it, and forgets both with the last future", () => {
    const h = new Harness();
    h.submit([{ key: "x" }, { key: "y", deps: ["x"] }], ["x", "y"]);
    h.feed({ op: "release", keys: ["x"] });
    expect([...h.core.keptSpecs().keys()].sort()).toEqual(["x", "y"]);
    h.feed({ op: "release", keys: ["y"] });
    expect(h.core.keptSpecs().size).toBe(0);
    // A spec submitted with no future wanting it is not kept.
    h.feed({ op: "submit", tasks: [spec("z")], wants: [] });
    expect(h.core.keptSpecs().size).toBe(0);
  });

  it("fails the futures of a refused submission with the scheduler's error, and those of a failed request with the host's", () => {
    const h = new Harness();
    h.submit([{ key: "a" }]);
    h.feed({ op: "wait", wait: 1, keys: ["a"] });
    const r = h.flush();
    const error = { name: "CycleError", message: "cycle in graph: a -> a", code: "CYCLE", keys: ["a"] };
    expect(h.feed({ op: "answered", request: r.request, replies: [{ ok: false, error }] })).toEqual([{ do: "reject-wait", wait: 1, failure: { kind: "refused", error } }]);
    expect(h.core.status("a")).toBe("error");
    h.submit([{ key: "b" }]);
    const r2 = h.flush();
    const lost = { kind: "host" as const, error: { name: "PayloadTooLargeError", message: "too large" } };
    h.feed({ op: "request-failed", request: r2.request, noResponders: false, failure: lost });
    expect(h.core.status("b")).toBe("error");
    // A reply missing from the answer is a failure too.
    h.submit([{ key: "c" }]);
    h.feed({ op: "answered", request: h.flush().request, replies: [] });
    expect(h.core.status("c")).toBe("error");
  });
});

describe("reports and waits", () => {
  it("settles waits by the scheduler's reports, and times out the others", () => {
    const h = new Harness();
    h.submit([{ key: "a" }, { key: "b" }]);
    expect(h.feed({ op: "wait", wait: 1, keys: ["a"], timeout: 100 })).toEqual([{ do: "set-timer", timer: { kind: "wait", wait: 1 }, ms: 100 }]);
    h.feed({ op: "wait", wait: 2, keys: ["a", "b"], timeout: 300 });
    expect(h.feed({ op: "reports", ops: [{ op: "key-in-memory", key: "a", nbytes: 8, workers: ["w1"] }] })).toEqual([
      { do: "clear-timer", timer: { kind: "wait", wait: 1 } },
      { do: "resolve-wait", wait: 1 },
    ]);
    // The message counts the keys not done when the wait began.
    expect(h.feed({ op: "timer", timer: { kind: "wait", wait: 2 } }, 300)).toEqual([{ do: "reject-wait", wait: 2, failure: { kind: "timeout", what: "results of 2 keys after 300 ms" } }]);
    // A late timer of a settled wait does nothing.
    expect(h.feed({ op: "timer", timer: { kind: "wait", wait: 1 } })).toEqual([]);
    // Done keys answer at once: finished, erred, or no future at all.
    expect(h.feed({ op: "wait", wait: 3, keys: ["a"] })).toEqual([{ do: "resolve-wait", wait: 3 }]);
    h.feed({ op: "reports", ops: [{ op: "key-erred", key: "b", failedKey: "b", error: { name: "ValueError", message: "no" } }] });
    expect(h.feed({ op: "wait", wait: 4, keys: ["b"] })).toEqual([{ do: "reject-wait", wait: 4, failure: { kind: "task-failed", key: "b", failedKey: "b", error: { name: "ValueError", message: "no" } } }]);
    expect(h.feed({ op: "wait", wait: 5, keys: ["ghost"] })).toEqual([{ do: "reject-wait", wait: 5, failure: { kind: "no-future", key: "ghost" } }]);
  });

  it("ignores reports of keys it holds no future for", () => {
    const h = new Harness();
    expect(h.feed({ op: "reports", ops: [{ op: "key-cancelled", key: "x", reason: "r" }] })).toEqual([]);
    expect(h.core.futures()).toEqual([]);
  });
});

describe("cancelling", () => {
  it("fails the key's futures and those of its dependents at once, through intermediate tasks, and names them all in one cancel-keys", () => {
    const h = new Harness();
    // a <- i (no future: an intermediate of a graph) <- d; b depends on nothing cancelled; c is finished and cancelled too.
    h.submit([{ key: "a" }, { key: "i", deps: ["a"] }, { key: "d", deps: ["i"] }, { key: "b" }, { key: "c" }], ["a", "d", "b", "c"]);
    h.flush();
    h.feed({ op: "reports", ops: [{ op: "key-in-memory", key: "c", nbytes: 8, workers: ["w1"] }] });
    h.feed({ op: "wait", wait: 1, keys: ["d"] });
    h.feed({ op: "wait", wait: 2, keys: ["b"] });
    const out = h.feed({ op: "cancel", call: 9, keys: ["a", "c", "ghost"] });
    expect(out).toEqual([{ do: "reject-wait", wait: 1, failure: { kind: "cancelled", key: "d", reason: "its dependency a was cancelled" } }, { do: "schedule-flush" }]);
    expect(h.core.status("a")).toBe("cancelled");
    expect(h.core.status("d")).toBe("cancelled");
    expect(h.core.status("c")).toBe("cancelled");
    expect(h.core.status("b")).toBe("pending");
    const sent = h.flush();
    expect(sent.ops).toEqual([{ op: "cancel-keys", client: "c", keys: ["a", "c", "d"] }]);
    expect(h.feed({ op: "answered", request: sent.request, replies: ok(1) })).toEqual([{ do: "answer-call", call: 9, reply: { ok: true } }]);
    // A wait or gather on a cancelled key fails at once; a report sent before the scheduler took the cancel is ignored.
    expect(h.feed({ op: "wait", wait: 3, keys: ["a"] })).toEqual([{ do: "reject-wait", wait: 3, failure: { kind: "cancelled", key: "a", reason: "by its client" } }]);
    expect(h.feed({ op: "reports", ops: [{ op: "key-in-memory", key: "a", nbytes: 8, workers: ["w1"] }] })).toEqual([]);
    expect(h.core.status("a")).toBe("cancelled");
    // The key's futures stay counted: released later, the key goes with a release-keys as usual.
    h.feed({ op: "release", keys: ["c"] });
    expect(h.flush().ops).toEqual([{ op: "release-keys", client: "c", keys: ["c"] }]);
  });

  it("waits again for a key submitted after its cancel, and resubmits nothing cancelled after a new run", () => {
    const h = new Harness();
    h.submit([{ key: "a" }, { key: "b" }]);
    const first = h.flush();
    h.feed({ op: "answered", request: first.request, replies: ok(1) });
    h.feed({ op: "cancel", call: 1, keys: ["a"] });
    h.submit([{ key: "a" }]);
    const again = h.flush();
    expect(again.ops).toEqual([
      { op: "cancel-keys", client: "c", keys: ["a"] },
      { op: "update-graph", client: "c", tasks: [spec("a")], wants: ["a"] },
    ]);
    h.feed({ op: "answered", request: again.request, replies: ok(2) });
    expect(h.core.status("a")).toBe("pending");
    expect(h.feed({ op: "wait", wait: 2, keys: ["a"] })).toEqual([]);
    expect(h.feed({ op: "reports", ops: [{ op: "key-in-memory", key: "a", nbytes: 8, workers: ["w1"] }] })).toEqual([{ do: "resolve-wait", wait: 2 }]);
    // Cancelled again, then the scheduler starts a new run: only b is submitted again.
    h.feed({ op: "cancel", call: 3, keys: ["a"] });
    h.flush();
    const query = h.feed({ op: "scheduler-started" }).find((i) => i.do === "query");
    expect(query).toMatchObject({ body: { op: "client-keys", keys: ["a", "b"] } });
    const asked = h.feed({ op: "client-keys", query: (query as { query: number }).query, answer: { known: [], wanted: [], run: 2 } });
    expect(asked).toEqual([{ do: "schedule-flush" }]);
    expect(h.flush().ops).toEqual([{ op: "update-graph", client: "c", tasks: [spec("b")], wants: ["b"] }]);
  });
});

describe("requests while no scheduler answers", () => {
  it("sends again with backoff until the request timeout, then fails the calls with a timeout", () => {
    const h = new Harness({ requestTimeout: 1000 });
    h.feed({ op: "attach" }, 0);
    h.feed({ op: "join", call: 9 });
    const r = h.flush(400);
    expect(r.timeout).toBe(1000);
    const failure = { kind: "host" as const, error: { name: "ProtocolError", message: "no responders" } };
    expect(h.feed({ op: "request-failed", request: r.request, noResponders: true, failure }, 410)).toEqual([{ do: "set-timer", timer: { kind: "retry", request: r.request }, ms: 50 }]);
    expect(h.feed({ op: "timer", timer: { kind: "retry", request: r.request } }, 460)).toEqual([{ do: "request", request: r.request, ops: r.ops, timeout: 940, attempt: 1 }]);
    expect(h.feed({ op: "request-failed", request: r.request, noResponders: true, failure }, 470)).toEqual([{ do: "set-timer", timer: { kind: "retry", request: r.request }, ms: 100 }]);
    // Near the deadline the pause is cut to what is left; past it, the calls fail.
    h.feed({ op: "timer", timer: { kind: "retry", request: r.request } }, 570);
    expect(h.feed({ op: "request-failed", request: r.request, noResponders: true, failure }, 1350)).toEqual([{ do: "set-timer", timer: { kind: "retry", request: r.request }, ms: 50 }]);
    h.feed({ op: "timer", timer: { kind: "retry", request: r.request } }, 1400);
    expect(h.feed({ op: "request-failed", request: r.request, noResponders: true, failure }, 1400)).toEqual([
      { do: "fail-call", call: 9, failure: { kind: "timeout", what: 'no scheduler of cluster "lab" answered within 1000 ms (no responders on natsched.lab.scheduler.client.c)' } },
    ]);
  });

  it("fails at once on any other failure, and with closed when the client closed during the pause", () => {
    const h = new Harness();
    h.feed({ op: "join", call: 1 });
    const r = h.flush(10);
    const other = { kind: "host" as const, error: { name: "TimeoutError", message: "timed out" } };
    expect(h.feed({ op: "request-failed", request: r.request, noResponders: false, failure: other })).toEqual([{ do: "fail-call", call: 1, failure: other }]);
    h.feed({ op: "join", call: 2 });
    const r2 = h.flush(20);
    h.feed({ op: "request-failed", request: r2.request, noResponders: true, failure: other });
    h.feed({ op: "close" });
    expect(h.feed({ op: "timer", timer: { kind: "retry", request: r2.request } }, 100)).toEqual([{ do: "fail-call", call: 2, failure: { kind: "closed" } }]);
  });

  it("waits past the request timeout while a scheduler says it is resuming, and sends at once when it has resumed", () => {
    const h = new Harness({ requestTimeout: 1000, resumeWait: 10_000 });
    h.feed({ op: "attach" }, 0);
    h.feed({ op: "scheduler-resuming", every: 250 }, 100);
    h.feed({ op: "join", call: 1 });
    const r = h.flush(100);
    const failure = { kind: "host" as const, error: { name: "ProtocolError", message: "no responders" } };
    // At 1500, past the request timeout, but an announcement came at 1200: it waits until 1200 + 4 × 250.
    h.feed({ op: "scheduler-resuming", every: 250 }, 1200);
    expect(h.feed({ op: "request-failed", request: r.request, noResponders: true, failure }, 1500)).toEqual([{ do: "set-timer", timer: { kind: "retry", request: r.request }, ms: 50 }]);
    expect(h.feed({ op: "scheduler-resumed" }, 1510)).toEqual([
      { do: "clear-timer", timer: { kind: "retry", request: r.request } },
      { do: "request", request: r.request, ops: r.ops, timeout: 250, attempt: 1 },
    ]);
    // The same envelope carries attach's join (then the run is asked) and the caller's.
    expect(h.feed({ op: "answered", request: r.request, replies: ok(2) })).toEqual([
      { do: "query", query: 1, body: { op: "client-keys", client: "c", keys: [] } },
      { do: "answer-call", call: 1, reply: { ok: true } },
    ]);
  });

  it("sends again, once the resumed scheduler serves, what it sent before that one began resuming, and takes only the new try's answer", () => {
    const { h, lost } = attachedThenLost({ requestTimeout: 30_000, resumeWait: 60_000 });
    h.feed({ op: "scheduler-resuming", every: 250 }, 1500);
    // Sent while it resumes: nobody takes it (no responders), it waits for the resumed one as before.
    h.feed({ op: "join", call: 3 });
    const during = h.flush(1600);
    const failure = { kind: "host" as const, error: { name: "ProtocolError", message: "no responders" } };
    h.feed({ op: "request-failed", request: during.request, noResponders: true, failure, attempt: 0 }, 1601);
    const out = h.feed({ op: "scheduler-resumed" }, 2000);
    const requests = out.filter((i) => i.do === "request");
    expect(requests).toEqual([
      { do: "request", request: during.request, ops: during.ops, timeout: 29_600, attempt: 1 },
      { do: "request", request: lost.request, ops: lost.ops, timeout: 28_100, attempt: 1 },
    ]);
    // The first try's failure (its timeout, long after) is stale; the second try's answer counts.
    const timedOut = { kind: "host" as const, error: { name: "TimeoutError", message: "timed out" } };
    expect(h.feed({ op: "request-failed", request: lost.request, noResponders: false, failure: timedOut, attempt: 0 }, 2100)).toEqual([]);
    expect(h.feed({ op: "answered", request: lost.request, replies: ok(1), attempt: 1 }, 2200)).toEqual([{ do: "answer-call", call: 2, reply: { ok: true } }]);
    // A request answered meanwhile is not sent again by a later resume.
    h.feed({ op: "answered", request: during.request, replies: ok(1), attempt: 1 }, 2300);
    h.feed({ op: "scheduler-resuming", every: 250 }, 5000);
    expect(h.feed({ op: "scheduler-resumed" }, 5500).filter((i) => i.do === "request")).toEqual([]);
  });

  it("sends again, when a scheduler announces a new run, what it has no answer for, once per run, and takes only the new try's answer", () => {
    const { h, lost } = attachedThenLost({ requestTimeout: 30_000 });
    // Sent when no scheduler served: it pauses before its next try.
    h.feed({ op: "join", call: 3 });
    const paused = h.flush(200);
    const noResponders = { kind: "host" as const, error: { name: "ProtocolError", message: "no responders" } };
    h.feed({ op: "request-failed", request: paused.request, noResponders: true, failure: noResponders, attempt: 0 }, 201);
    const out = h.feed({ op: "scheduler-started", run: 2 }, 1000);
    expect(out.filter((i) => i.do === "request" || i.do === "clear-timer")).toEqual([
      { do: "request", request: lost.request, ops: lost.ops, timeout: 29_100, attempt: 1 },
      { do: "clear-timer", timer: { kind: "retry", request: paused.request } },
      { do: "request", request: paused.request, ops: paused.ops, timeout: 29_200, attempt: 1 },
    ]);
    // The run's repeated announcements send nothing again; the first try's late failure changes nothing.
    expect(h.feed({ op: "scheduler-started", run: 2 }, 2000).filter((i) => i.do === "request")).toEqual([]);
    const timedOut = { kind: "host" as const, error: { name: "TimeoutError", message: "timed out" } };
    expect(h.feed({ op: "request-failed", request: lost.request, noResponders: false, failure: timedOut, attempt: 0 }, 30_100)).toEqual([]);
    expect(h.feed({ op: "answered", request: lost.request, replies: ok(1), attempt: 1 }, 30_200)).toEqual([{ do: "answer-call", call: 2, reply: { ok: true } }]);
    // Another new run: what is still out goes again.
    const again = h.feed({ op: "scheduler-started", run: 3 }, 31_000).filter((i) => i.do === "request");
    expect(again).toEqual([{ do: "request", request: paused.request, ops: paused.ops, timeout: 250, attempt: 2 }]);
  });

  it("names how long it waited for a resuming scheduler when it gives up", () => {
    const h = new Harness({ requestTimeout: 1000, resumeWait: 2000 });
    h.feed({ op: "attach" }, 0);
    h.feed({ op: "join", call: 1 });
    const r = h.flush(0);
    h.feed({ op: "scheduler-resuming", every: 250 }, 500);
    h.feed({ op: "scheduler-resuming", every: 250 }, 1900);
    const failure = { kind: "host" as const, error: { name: "ProtocolError", message: "no responders" } };
    const out = h.feed({ op: "request-failed", request: r.request, noResponders: true, failure }, 2000);
    expect(out).toEqual([
      {
        do: "fail-call",
        call: 1,
        failure: { kind: "timeout", what: `no scheduler of cluster "lab" answered within 2000 ms (it last said it was resuming 100 ms before) (no responders on natsched.lab.scheduler.client.c)` },
      },
    ]);
  });
});

describe("a new run of the scheduler", () => {
  function running(): Harness {
    const h = new Harness();
    h.feed({ op: "attach" });
    const join = h.flush();
    h.feed({ op: "answered", request: join.request, replies: ok(1) });
    h.feed({ op: "client-keys", query: 1, answer: { known: [], run: 1 } });
    return h;
  }

  it("resubmits what the new run lost with the graph below it, and fails what needs scattered data", () => {
    const h = running();
    // x <- y (only y held), s scattered, z needs s, e erred.
    h.submit([{ key: "x" }, { key: "y", deps: ["x"] }], ["y"]);
    h.feed({ op: "retain", keys: ["s"] });
    h.feed({ op: "scatter-start", scatter: 1, keys: ["s"] });
    h.feed({ op: "update-data", call: 5, data: [{ key: "s", nbytes: 8, workers: ["w1"] }] });
    const sent = h.flush();
    h.feed({ op: "answered", request: sent.request, replies: ok(2) });
    h.feed({ op: "scatter-end", scatter: 1 });
    h.submit([{ key: "z", deps: ["s"] }, { key: "e" }]);
    h.feed({ op: "answered", request: h.flush().request, replies: ok(1) });
    h.feed({ op: "reports", ops: [{ op: "key-in-memory", key: "y", nbytes: 8, workers: ["w1"] }, { op: "key-in-memory", key: "s", nbytes: 8, workers: ["w1"] }, { op: "key-erred", key: "e", failedKey: "e", error: { name: "E", message: "m" } }] });
    h.feed({ op: "wait", wait: 1, keys: ["z"] });

    const asked = h.feed({ op: "scheduler-started" });
    expect(asked).toEqual([{ do: "query", query: 2, body: { op: "client-keys", client: "c", keys: ["y", "s", "z", "e", "x"] } }]);
    const out = h.feed({ op: "client-keys", query: 2, answer: { known: [], wanted: [], run: 2 } });
    expect(out).toEqual([
      { do: "reject-wait", wait: 1, failure: { kind: "scheduler-restarted", key: "z", cluster: "lab", lostKey: "s" } },
      { do: "schedule-flush" },
    ]);
    expect(h.flush().ops).toEqual([{ op: "update-graph", client: "c", tasks: [spec("y", ["x"]), spec("x")], wants: ["y"] }]);
    expect(Object.fromEntries(h.core.futures().map((f) => [f.key, f.status]))).toEqual({ y: "pending", s: "error", z: "error", e: "error" });
    expect(h.core.run).toBe(2);
  });

  it("leaves alone what the new run holds for it, what it knows, and submissions on their way", () => {
    const h = running();
    h.submit([{ key: "a" }, { key: "b", deps: ["a"] }], ["b"]);
    h.feed({ op: "answered", request: h.flush().request, replies: ok(1) });
    h.submit([{ key: "late" }]); // not flushed yet: on its way
    h.feed({ op: "scheduler-started" });
    // The new run knows a (a worker that held it registered again) and holds nothing for the client.
    expect(h.feed({ op: "client-keys", query: 2, answer: { known: ["a"], wanted: [], run: 2 } })).toEqual([]);
    const sent = h.flush();
    expect(sent.ops).toEqual([
      { op: "update-graph", client: "c", tasks: [spec("late")], wants: ["late"] },
      { op: "update-graph", client: "c", tasks: [spec("b", ["a"])], wants: ["b"] },
    ]);
    // Asked again (the announcement repeats), the new run now holds b: nothing to do.
    h.feed({ op: "answered", request: sent.request, replies: ok(2) });
    h.feed({ op: "scheduler-started" });
    expect(h.feed({ op: "client-keys", query: 3, answer: { known: ["a", "b", "late"], wanted: ["b", "late"], run: 2 } })).toEqual([]);
  });

  it("asks once more if the scheduler announces again while it reconciles", () => {
    const h = running();
    h.submit([{ key: "a" }]);
    h.feed({ op: "answered", request: h.flush().request, replies: ok(1) });
    expect(kinds(h.feed({ op: "scheduler-started" }))).toEqual(["query"]);
    expect(h.feed({ op: "scheduler-started" })).toEqual([]);
    expect(h.feed({ op: "reconnected" })).toEqual([]);
    // The answer is acted on, then the question asked again (once).
    const out = h.feed({ op: "client-keys", query: 2, answer: { known: ["a"], wanted: ["a"], run: 2 } });
    expect(out).toEqual([{ do: "query", query: 3, body: { op: "client-keys", client: "c", keys: ["a"] } }]);
    expect(h.feed({ op: "query-failed", query: 3 })).toEqual([]);
  });
});

describe("a connection back", () => {
  it("takes the reports it missed when back to the run it knew", () => {
    const h = new Harness();
    h.feed({ op: "attach" });
    h.feed({ op: "answered", request: h.flush().request, replies: ok(1) });
    h.feed({ op: "client-keys", query: 1, answer: { known: [], run: 1 } });
    h.submit([{ key: "a" }, { key: "b" }, { key: "c" }]);
    h.feed({ op: "answered", request: h.flush().request, replies: ok(1) });
    h.feed({ op: "reports", ops: [{ op: "key-erred", key: "c", failedKey: "c", error: { name: "E", message: "m" } }] });
    h.feed({ op: "wait", wait: 1, keys: ["a"] });
    expect(h.feed({ op: "reconnected" })).toEqual([{ do: "query", query: 2, body: { op: "client-keys", client: "c", keys: ["a", "b", "c"] } }]);
    const reports = [
      { op: "key-in-memory" as const, key: "a", nbytes: 8, workers: ["w1"] },
      { op: "key-in-memory" as const, key: "c", nbytes: 8, workers: ["w1"] },
    ];
    // Same run: nothing resubmitted; the report of a waiting key is taken, that of a done key is not.
    expect(h.feed({ op: "client-keys", query: 2, answer: { known: ["a", "b", "c"], wanted: ["a", "b", "c"], run: 1, reports } })).toEqual([{ do: "resolve-wait", wait: 1 }]);
    expect(h.core.status("c")).toBe("error");
  });

  it("reconciles when the run it comes back to is a new one, and only learns the run when it holds nothing", () => {
    const h = new Harness();
    h.feed({ op: "attach" });
    h.feed({ op: "answered", request: h.flush().request, replies: ok(1) });
    h.feed({ op: "client-keys", query: 1, answer: { known: [], run: 1 } });
    expect(h.feed({ op: "reconnected" })).toEqual([{ do: "query", query: 2, body: { op: "client-keys", client: "c", keys: [] } }]);
    h.feed({ op: "client-keys", query: 2, answer: { known: [], run: 3 } });
    expect(h.core.run).toBe(3);
    h.submit([{ key: "a" }]);
    h.feed({ op: "answered", request: h.flush().request, replies: ok(1) });
    h.feed({ op: "reconnected" });
    expect(kinds(h.feed({ op: "client-keys", query: 3, answer: { known: [], wanted: [], run: 4 } }))).toEqual(["schedule-flush"]);
    expect(h.flush().ops).toEqual([{ op: "update-graph", client: "c", tasks: [spec("a")], wants: ["a"] }]);
  });
});

describe("gathers", () => {
  function done(h: Harness, key: string, workers: string[]): void {
    h.feed({ op: "reports", ops: [{ op: "key-in-memory", key, nbytes: 8, workers }] });
  }

  it("asks each key's holder once the keys are done, one fetch per holder", () => {
    const h = new Harness();
    h.submit([{ key: "a" }, { key: "b" }, { key: "c" }]);
    expect(h.feed({ op: "gather", gather: 1, keys: ["a", "b", "c", "a"] })).toEqual([]);
    done(h, "a", ["w1"]);
    done(h, "b", ["w2"]);
    expect(h.feed({ op: "reports", ops: [{ op: "key-in-memory", key: "c", nbytes: 8, workers: ["w1", "w2"] }] })).toEqual([
      { do: "fetch", gather: 1, holder: "w1", keys: ["a", "c"] },
      { do: "fetch", gather: 1, holder: "w2", keys: ["b"] },
    ]);
    expect(h.feed({ op: "fetched", gather: 1, holder: "w2", keys: ["b"], missing: [] })).toEqual([]);
    expect(h.feed({ op: "fetched", gather: 1, holder: "w1", keys: ["a", "c"], missing: [] })).toEqual([{ do: "resolve-gather", gather: 1 }]);
  });

  it("drops a holder that did not deliver, asks who has the key, and asks the next one after a pause", () => {
    const h = new Harness();
    h.submit([{ key: "a" }]);
    done(h, "a", ["w1"]);
    expect(h.feed({ op: "gather", gather: 1, keys: ["a"] })).toEqual([{ do: "fetch", gather: 1, holder: "w1", keys: ["a"] }]);
    expect(h.feed({ op: "fetch-failed", gather: 1, holder: "w1", keys: ["a"] })).toEqual([{ do: "query", query: 1, body: { op: "who-has", keys: ["a"] } }]);
    expect(h.feed({ op: "who-has", query: 1, whoHas: { a: ["w3"] } })).toEqual([{ do: "set-timer", timer: { kind: "gather-backoff", gather: 1 }, ms: 50 }]);
    expect(h.feed({ op: "timer", timer: { kind: "gather-backoff", gather: 1 } }, 50)).toEqual([{ do: "fetch", gather: 1, holder: "w3", keys: ["a"] }]);
    expect(h.feed({ op: "fetched", gather: 1, holder: "w3", keys: ["a"], missing: [] })).toEqual([{ do: "resolve-gather", gather: 1 }]);
  });

  it("takes a key nobody holds as lost: it waits for the next report, and asks the scheduler about its run", () => {
    const h = new Harness();
    h.submit([{ key: "a" }]);
    done(h, "a", ["w1"]);
    h.feed({ op: "gather", gather: 1, keys: ["a"] });
    h.feed({ op: "fetched", gather: 1, holder: "w1", keys: ["a"], missing: ["a"] });
    expect(h.feed({ op: "query-failed", query: 1 })).toEqual([
      { do: "query", query: 2, body: { op: "client-keys", client: "c", keys: ["a"] } },
      { do: "set-timer", timer: { kind: "gather-backoff", gather: 1 }, ms: 50 },
    ]);
    expect(h.core.status("a")).toBe("pending");
    expect(h.feed({ op: "timer", timer: { kind: "gather-backoff", gather: 1 } }, 50)).toEqual([]);
    expect(h.feed({ op: "reports", ops: [{ op: "key-in-memory", key: "a", nbytes: 8, workers: ["w2"] }] })).toEqual([{ do: "fetch", gather: 1, holder: "w2", keys: ["a"] }]);
  });

  it("gives up when every holder refused, or when the pause would pass its timeout", () => {
    const h = new Harness();
    h.submit([{ key: "a" }, { key: "b" }]);
    done(h, "a", ["w1"]);
    done(h, "b", ["w1", "w2"]);
    const refused = { kind: "host" as const, error: { name: "HolderRefusedError", message: "not yours" } };
    h.feed({ op: "gather", gather: 1, keys: ["a"] });
    expect(h.feed({ op: "fetch-failed", gather: 1, holder: "w1", keys: ["a"], refused })).toEqual([{ do: "query", query: 1, body: { op: "who-has", keys: ["a"] } }]);
    expect(h.feed({ op: "who-has", query: 1, whoHas: { a: ["w1"] } })).toEqual([{ do: "reject-gather", gather: 1, failure: refused }]);
    h.feed({ op: "gather", gather: 2, keys: ["b"], timeout: 120 });
    expect(h.feed({ op: "fetch-failed", gather: 2, holder: "w1", keys: ["b"] }, 10)).toEqual([{ do: "set-timer", timer: { kind: "gather-backoff", gather: 2 }, ms: 50 }]);
    expect(h.feed({ op: "timer", timer: { kind: "gather-backoff", gather: 2 } }, 60)).toEqual([{ do: "fetch", gather: 2, holder: "w2", keys: ["b"] }]);
    expect(h.feed({ op: "fetch-failed", gather: 2, holder: "w2", keys: ["b"] }, 70)).toEqual([
      { do: "query", query: 2, body: { op: "who-has", keys: ["b"] } },
    ]);
    expect(h.feed({ op: "who-has", query: 2, whoHas: { b: ["w2"] } }, 70)).toEqual([
      { do: "reject-gather", gather: 2, failure: { kind: "timeout", what: "result of b after 120 ms (the workers said to hold it did not deliver)" } },
    ]);
  });

  it("fails with the first key's failure, or after its timeout while a key is pending", () => {
    const h = new Harness();
    h.submit([{ key: "a" }, { key: "b" }]);
    expect(h.feed({ op: "gather", gather: 1, keys: ["a", "b"], timeout: 500 })).toEqual([{ do: "set-timer", timer: { kind: "gather-wait", gather: 1 }, ms: 500 }]);
    expect(h.feed({ op: "reports", ops: [{ op: "key-cancelled", key: "b", reason: "released by the scheduler" }] })).toEqual([
      { do: "clear-timer", timer: { kind: "gather-wait", gather: 1 } },
      { do: "reject-gather", gather: 1, failure: { kind: "cancelled", key: "b", reason: "released by the scheduler" } },
    ]);
    h.feed({ op: "gather", gather: 2, keys: ["a"], timeout: 200 }, 100);
    expect(h.feed({ op: "timer", timer: { kind: "gather-wait", gather: 2 } }, 300)).toEqual([{ do: "reject-gather", gather: 2, failure: { kind: "timeout", what: "result of a after 200 ms" } }]);
    expect(h.feed({ op: "gather", gather: 3, keys: [] })).toEqual([{ do: "resolve-gather", gather: 3 }]);
  });
});

describe("closing", () => {
  it("leaves, stops heartbeats, and fails what waits with closed", () => {
    const h = new Harness();
    h.feed({ op: "attach" });
    h.submit([{ key: "a" }]);
    h.feed({ op: "wait", wait: 1, keys: ["a"], timeout: 1000 });
    h.feed({ op: "gather", gather: 2, keys: ["a"] });
    const out = h.feed({ op: "close", call: 3 });
    expect(out).toEqual([
      { do: "clear-timer", timer: { kind: "heartbeat" } },
      { do: "clear-timer", timer: { kind: "wait", wait: 1 } },
      { do: "reject-wait", wait: 1, failure: { kind: "closed" } },
      { do: "reject-gather", gather: 2, failure: { kind: "closed" } },
    ]);
    expect(h.flush().ops.map((op) => op.op)).toEqual(["client-join", "update-graph", "client-leave"]);
    expect(h.core.closed).toBe(true);
    expect(h.core.futures()).toEqual([]);
    // A closed client neither releases nor reconciles.
    expect(h.feed({ op: "release", keys: ["a"] })).toEqual([]);
    expect(h.feed({ op: "scheduler-started" })).toEqual([]);
  });
});

describe("the core is pure", () => {
  it("imports only machines/ and reads no clock, timer or randomness", () => {
    const dir = join(import.meta.dirname, "..", "machines", "client");
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
      const source = readFileSync(join(dir, file), "utf8");
      for (const [, from] of source.matchAll(/from "([^"]+)"/g)) expect(`${file}: ${from}`).toMatch(/: \.\.?\/(?!\.\.\/)/);
      expect(source, file).not.toMatch(/Date\.now|setTimeout|setInterval|Math\.random|performance\.now|node:/);
    }
  });
});
