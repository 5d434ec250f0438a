/**
 * ClientCore and fire-and-forget: the op the core sends, and the order of one envelope's ops
 * when the futures are released in the same turn (the scheduler must learn of the key, and
 * that it runs regardless, before it learns the client let go of it).
 */
import { describe, expect, it } from "vitest";
import { ClientCore } from "../machines/client/core.js";
import type { ClientInput, ClientInstruction, ClientStimulus } from "../machines/client/inputs.js";
import type { ClientToScheduler, TaskSpec } from "../machines/protocol.js";
import { CLIENT_INIT } from "./support/client-core-init.js";

function feed(core: ClientCore, stimulus: ClientStimulus): readonly ClientInstruction[] {
  return core.handle({ ...stimulus, t: 0 } as ClientInput);
}

function flushed(core: ClientCore): readonly ClientToScheduler[] {
  const request = feed(core, { op: "flush" }).find((i) => i.do === "request");
  if (request === undefined || request.do !== "request") throw new Error("no request");
  return request.ops;
}

const spec = (key: string, deps: string[] = []): TaskSpec => ({ key, func: "f", args: deps, deps });

describe("fire-and-forget in the client core", () => {
  it("submit, fire and forget, release in one turn: the graph, then the fire-and-forget, then the release; other releases go first as before", () => {
    const core = new ClientCore(CLIENT_INIT);
    feed(core, { op: "retain", keys: ["old"] });
    feed(core, { op: "submit", tasks: [spec("old")], wants: ["old"] });
    flushed(core);
    feed(core, { op: "retain", keys: ["x", "y"] });
    feed(core, { op: "submit", tasks: [spec("x"), spec("y", ["x"])], wants: ["x", "y"] });
    feed(core, { op: "fire-and-forget", call: 1, keys: ["y", "y"] });
    feed(core, { op: "release", keys: ["old", "x", "y"] });
    const ops = flushed(core);
    expect(ops).toEqual([
      { op: "release-keys", client: CLIENT_INIT.id, keys: ["old"] },
      { op: "update-graph", client: CLIENT_INIT.id, tasks: [spec("x"), spec("y", ["x"])], wants: ["x", "y"] },
      { op: "fire-and-forget", client: CLIENT_INIT.id, keys: ["y"] },
      { op: "release-keys", client: CLIENT_INIT.id, keys: ["x", "y"] },
    ]);
  });

  it("the caller's call is answered by the fire-and-forget's reply, whatever comes before it", () => {
    const core = new ClientCore(CLIENT_INIT);
    feed(core, { op: "retain", keys: ["a"] });
    feed(core, { op: "submit", tasks: [spec("a")], wants: ["a"] });
    flushed(core);
    feed(core, { op: "release", keys: ["a"] });
    feed(core, { op: "retain", keys: ["b"] });
    feed(core, { op: "submit", tasks: [spec("b")], wants: ["b"] });
    feed(core, { op: "fire-and-forget", call: 7, keys: ["b"] });
    const out = feed(core, { op: "flush" });
    const request = out.find((i) => i.do === "request")!;
    if (request.do !== "request") throw new Error("no request");
    expect(request.ops.map((op) => op.op)).toEqual(["release-keys", "update-graph", "fire-and-forget"]);
    const refused = { ok: false as const, error: { name: "ProtocolError", message: "no" } };
    expect(feed(core, { op: "answered", request: request.request, replies: [{ ok: true }, { ok: true }, refused] })).toEqual([{ do: "answer-call", call: 7, reply: refused }]);
  });
});
