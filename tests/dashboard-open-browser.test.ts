/**
 * The page over a recorded log the server is still reading, in headless Chromium: with no
 * cache it says how far the reading is and draws the bars read so far, then the whole
 * stream once read (`data-rendered`), or once the server's first pass has it while the
 * records are read again; with the dashboard's cache (open-cache.ts) it draws
 * the whole log's stream and workers before the server has read a record, and the views
 * that need every record (scrubber, machines) answer once it has. The test feeds the
 * model's records itself, so what the page shows at each step is known.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DashboardModel } from "../dashboard/server/model.js";
import { readOpeningCache } from "../dashboard/server/open-cache.js";
import { openRecordedLog } from "../dashboard/server/recorded-log.js";
import { startDashboard, type Dashboard } from "../dashboard/server/server.js";
import { readLogSync } from "../log/reader.js";
import type { LogRecord } from "../log/types.js";
import { launchBrowser, openPage, setScrubber } from "./support/browser.js";
import { recordIncident } from "./support/recorded-runs.js";

let dir: string;
let log: string;
let records: LogRecord[];
let executions: number;
let browser: Browser;
const dashboards: Dashboard[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "natsched-dash-open-page-"));
  log = join(dir, "incident.natlog");
  await recordIncident(log);
  records = readLogSync(log).records;
  executions = records.filter((r) => r.kind === "transition" && r.machine === "wtask" && r.to === "executing" && r.from !== "executing").length;
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  for (const d of dashboards) await d.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function serve(model: DashboardModel): Promise<string> {
  const dashboard = await startDashboard(model);
  dashboards.push(dashboard);
  return dashboard.url;
}

const bars = (page: import("playwright-core").Page) => page.getAttribute("#stream-slot [data-bars]", "data-bars").then(Number);

describe("the page while the server reads a recorded log", () => {
  it("without a cache: shows the reading's progress and the bars so far, then the whole stream", async () => {
    const model = new DashboardModel({ kind: "log", location: log, live: false });
    model.beginLoading(records.length);
    const half = Math.floor(records.length / 2);
    for (const record of records.slice(0, half)) model.add(record);
    const { page, errors } = await openPage(browser, await serve(model));
    await page.waitForSelector(`body[data-loading="${half}"]`, { timeout: 60_000 });
    expect(await page.textContent("#run-time")).toContain(`reading the log: ${half.toLocaleString("en")} of ${records.length.toLocaleString("en")} records`);
    const early = await bars(page);
    expect(early).toBeGreaterThan(0);
    expect(early).toBeLessThan(executions);
    expect(await page.getAttribute("body", "data-rendered")).toBeNull();
    for (const record of records.slice(half)) model.add(record);
    model.loaded();
    await page.waitForSelector("body[data-rendered=true]", { timeout: 60_000 });
    expect(await bars(page)).toBe(executions);
    expect(await page.getAttribute("body", "data-loading")).toBeNull();
    await page.waitForSelector("body[data-ready=true]", { timeout: 60_000 });
    expect(await page.getAttribute("#scrubber-slot input[type=range]", "max")).toBe(String(records.length));
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it("after the server's first pass: draws the whole stream while the records are read again; the scrubber answers once they are", async () => {
    const model = new DashboardModel({ kind: "log", location: log, live: false });
    model.beginLoading(records.length);
    const half = Math.floor(records.length / 2);
    for (const record of records.slice(0, half)) model.addFirst(record);
    const { page, errors } = await openPage(browser, await serve(model));
    await page.waitForSelector(`body[data-loading="${half}"]`, { timeout: 60_000 });
    const early = await bars(page);
    expect(early).toBeGreaterThan(0);
    expect(early).toBeLessThan(executions);
    for (const record of records.slice(half)) model.addFirst(record);
    const opening = model.firstPassDone();
    await page.waitForSelector("body[data-rendered=true]", { timeout: 60_000 });
    expect(await bars(page)).toBe(executions);
    expect(await page.getAttribute("body", "data-records")).toBe(String(records.length));
    const workers = await page.$$eval("tr[data-worker]", (rows) => rows.map((r) => (r as HTMLElement).dataset.worker));
    expect(workers.sort()).toEqual(opening.summary.now.workers.map((w) => w.name).sort());
    // The records are read again: the views that need them wait.
    expect(await page.getAttribute("body", "data-loading")).toBe("0");
    expect(await page.getAttribute("body", "data-ready")).toBeNull();
    for (const record of records) model.add(record);
    model.loaded();
    await page.waitForSelector("body[data-ready=true]", { timeout: 60_000 });
    expect(await page.getAttribute("body", "data-loading")).toBeNull();
    expect(await page.getAttribute("#scrubber-slot input[type=range]", "max")).toBe(String(records.length));
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it("with the cache: draws the whole log before a record is read; the scrubber answers once it is", async () => {
    await (await openRecordedLog(log, { cache: true })).loaded;
    const opening = (await readOpeningCache(log))!;
    expect(opening).toBeDefined();
    const model = new DashboardModel({ kind: "log", location: log, live: false });
    model.beginLoading(records.length, opening);
    const { page, errors } = await openPage(browser, await serve(model));
    await page.waitForSelector("body[data-rendered=true]", { timeout: 60_000 });
    expect(model.size).toBe(0);
    expect(await bars(page)).toBe(executions);
    const workers = await page.$$eval("tr[data-worker]", (rows) => rows.map((r) => (r as HTMLElement).dataset.worker));
    expect(workers.sort()).toEqual(opening.summary.now.workers.map((w) => w.name).sort());
    expect(await page.getAttribute("body", "data-loading")).toBe("0");
    // A move of the scrubber waits for the records.
    const half = Math.floor(records.length / 2);
    await setScrubber(page, half);
    for (const record of records) model.add(record);
    model.loaded();
    await page.waitForSelector(`#scrubber-slot[data-index="${half}"]`, { timeout: 60_000 });
    await page.waitForSelector("body[data-ready=true]", { timeout: 60_000 });
    expect(await page.getAttribute("body", "data-loading")).toBeNull();
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
