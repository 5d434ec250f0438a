/**
 * The first pass's fold (dashboard/server/first-fold.ts) against DashFold on real logs: the
 * same view, as JSON text, after every record (a recorded incident with steals, failures and
 * a killed worker; a tree of tasks). The summary the page first draws comes from it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DashFold } from "../dashboard/server/dash-fold.js";
import { FirstFold } from "../dashboard/server/first-fold.js";
import { readLogSync } from "../log/reader.js";
import type { LogRecord } from "../log/types.js";
import { recordIncident, recordTree } from "./support/recorded-runs.js";

let dir: string;
const logs: { name: string; records: LogRecord[] }[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "natsched-first-fold-"));
  await recordIncident(join(dir, "incident.natlog"));
  await recordTree(join(dir, "tree.natlog"), 64);
  for (const name of ["incident", "tree"]) logs.push({ name, records: readLogSync(join(dir, `${name}.natlog`)).records });
}, 120_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the first pass's fold", () => {
  it("shows what DashFold shows after every record", () => {
    for (const { name, records } of logs) {
      const kinds = new Set(records.map((r) => (r.kind === "transition" ? `${r.machine}:${r.event}` : r.kind)));
      // The incident has what the fold counts: steals confirmed, failures, a worker killed.
      if (name === "incident") for (const kind of ["task:STEAL_CONFIRM", "wtask:FAIL", "stop"]) expect(kinds.has(kind), kind).toBe(true);
      const first = new FirstFold();
      const dash = new DashFold();
      expect(JSON.stringify(first.view())).toBe(JSON.stringify(dash.view()));
      records.forEach((record, i) => {
        first.add(record);
        dash.add(record);
        expect(JSON.stringify(first.view()), `${name} after record ${i + 1}`).toBe(JSON.stringify(dash.view()));
      });
    }
  });
});
