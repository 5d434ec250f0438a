/**
 * The dashboard over a recorded incident (stealing, failing tasks, a worker killed), in
 * headless Chromium: what a person sees. Workers by name, a bar per execution in the log,
 * a click on a key that opens its story, the scrubber changing the cluster shown, and no
 * error in the page's console. With NATSCHED_SCREENSHOT=1 it also retakes docs/dashboard.png.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readLogSync } from "../log/reader.js";
import type { LogRecord } from "../log/types.js";
import { recordedLogModel } from "../dashboard/server/recorded-log.js";
import { startDashboard, type Dashboard } from "../dashboard/server/server.js";
import { launchBrowser, openPage, setScrubber } from "./support/browser.js";
import { recordIncident } from "./support/recorded-runs.js";

const ROOT = join(import.meta.dirname, "..");
let dir: string;
let records: LogRecord[];
let dashboard: Dashboard;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "natsched-dash-"));
  const log = join(dir, "incident.natlog");
  await recordIncident(log);
  records = readLogSync(log).records;
  const { model } = await recordedLogModel(log);
  dashboard = await startDashboard(model);
  browser = await launchBrowser();
  ({ page, errors } = await openPage(browser, dashboard.url));
  await page.waitForSelector("body[data-ready=true]", { timeout: 60_000 });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await dashboard?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The workers table as shown: name -> its row's data attributes. */
async function workerRows(): Promise<Record<string, { status: string; done: number }>> {
  return page.$$eval("tr[data-worker]", (rows) => Object.fromEntries(rows.map((r) => [(r as HTMLElement).dataset.worker!, { status: (r as HTMLElement).dataset.status!, done: Number((r as HTMLElement).dataset.done) }])));
}

async function moveScrubberTo(index: number): Promise<void> {
  await setScrubber(page, index);
  await page.waitForSelector(`#scrubber-slot[data-index="${index}"]`, { timeout: 30_000 });
}

describe("the dashboard over a recorded log, in Chromium", () => {
  it("shows the log's workers by name, the killed one stopped", async () => {
    const workers = records.filter((r) => r.kind === "start" && r.actor.startsWith("worker.")).map((r) => r.actor.slice("worker.".length));
    const rows = await workerRows();
    expect(Object.keys(rows).sort()).toEqual([...new Set(workers)].sort());
    expect(rows["worker-2"]!.status).toBe("stopped");
    expect(await page.textContent("tr[data-worker=worker-2] td.state")).toContain("killed");
    // Tasks done per worker, as the log's workers finished them.
    const done = records.filter((r) => r.kind === "transition" && r.machine === "wtask" && r.actor === "worker.worker-1" && r.from === "executing" && r.to === "memory").length;
    expect(rows["worker-1"]!.done).toBe(done);
  });

  it("draws a bar per execution in the log", async () => {
    const executions = records.filter((r) => r.kind === "transition" && r.machine === "wtask" && r.to === "executing" && r.from !== "executing").length;
    expect(executions).toBeGreaterThan(300);
    const bars = await page.getAttribute("#stream-slot [data-bars]", "data-bars");
    expect(Number(bars)).toBe(executions);
  });

  it("shows progress per prefix, with the failing tasks erred", async () => {
    const broken = await page.$eval("[data-prefix=broken]", (row) => ({ ...(row as HTMLElement).dataset }));
    expect(Number(broken.total)).toBe(4);
    expect(Number(broken.erred)).toBe(4);
  });

  it("opens a key's story, with reasons and causes", async () => {
    const key = (records.find((r) => r.kind === "transition" && r.machine === "task" && r.event === "STEAL_CONFIRM") as { id: string }).id;
    await page.fill(".key-box input", key.slice(0, 14));
    await page.press(".key-box input", "Enter");
    await page.waitForSelector(`#story-slot[data-key="${key}"][data-lines]`, { timeout: 30_000 });
    const text = await page.textContent("#story-slot");
    expect(text).toContain("STEAL_CONFIRM");
    expect(text).toContain("cause:");
    expect(await page.isVisible("#story-slot")).toBe(true);
    await page.click("#story-slot .close");
  });

  it("opens the story of a bar clicked on the task stream: a failed execution", async () => {
    const failed = (records.find((r) => r.kind === "transition" && r.machine === "wtask" && r.event === "FAIL") as { id: string }).id;
    const at = await page.evaluate((key) => {
      const p = (window as unknown as { dashboard: { stream: { locate(k: string): { x: number; y: number } | null } } }).dashboard.stream.locate(key);
      const rect = document.querySelector("#stream-slot canvas")!.getBoundingClientRect();
      return p === null ? null : { x: rect.left + p.x, y: rect.top + p.y };
    }, failed);
    expect(at).not.toBeNull();
    await page.mouse.click(at!.x, at!.y);
    await page.waitForSelector(`#story-slot[data-key="${failed}"][data-lines]`, { timeout: 30_000 });
    expect(await page.textContent("#story-slot")).toContain("FAIL");
    await page.click("#story-slot .close");
  });

  it("scrubs: the cluster at a cut, record by record, and a click on an executing key opens its story", async () => {
    // Halfway through the log worker-2 (killed near the end) still runs, and keys execute.
    const half = Math.floor(records.length / 2);
    await moveScrubberTo(half);
    expect((await workerRows())["worker-2"]!.status).toBe("running");
    await page.click("#scrubber-slot .forward");
    await page.waitForSelector(`#scrubber-slot[data-index="${half + 1}"]`, { timeout: 30_000 });
    await page.click("#scrubber-slot .back");
    await page.click("#scrubber-slot .back");
    await page.waitForSelector(`#scrubber-slot[data-index="${half - 1}"]`, { timeout: 30_000 });
    const link = page.locator("td.executing a.key").first();
    const key = await link.textContent();
    await link.click();
    await page.waitForSelector(`#story-slot[data-key="${key}"][data-lines]`, { timeout: 30_000 });
    await page.click("#story-slot .close");
    await moveScrubberTo(records.length);
    expect((await workerRows())["worker-2"]!.status).toBe("stopped");
    // Seven steps that each wait on the page: more than the default 30 s on a busy machine.
  }, 120_000);

  it("takes the README's screenshot", async () => {
    await page.setViewportSize({ width: 1700, height: 950 });
    await moveScrubberTo(Math.floor(records.length * 0.6));
    const key = (records.find((r) => r.kind === "transition" && r.machine === "task" && r.to === "erred") as { id: string }).id;
    await page.fill(".key-box input", key);
    await page.press(".key-box input", "Enter");
    await page.waitForSelector(`#story-slot[data-key="${key}"][data-lines]`, { timeout: 30_000 });
    const out = process.env.NATSCHED_SCREENSHOT === "1" ? join(ROOT, "docs", "dashboard.png") : join(dir, "dashboard.png");
    await page.screenshot({ path: out });
    expect(readFileSync(out).subarray(1, 4).toString()).toBe("PNG");
  });

  it("logged no error in the page's console", () => {
    expect(errors).toEqual([]);
  });
});
