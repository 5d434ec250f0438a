/**
 * The machines and what-if views in the dashboard page (bundled by esbuild, served by the
 * dashboard server over a real recorded log), in headless Chromium: every state of every
 * machine drawn with its count, the counts following the scrubber, a what-if run showing the
 * recorded and simulated streams with their makespans, a bad setting's message, and no
 * error in the page's console.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readLogSync } from "../log/reader.js";
import type { LogRecord } from "../log/types.js";
import { graphOf, MACHINE_DEFINITIONS } from "../dashboard/server/machine-graph.js";
import { machinesView } from "../dashboard/server/machines-handler.js";
import { recordedLogModel } from "../dashboard/server/recorded-log.js";
import { startDashboard, type Dashboard } from "../dashboard/server/server.js";
import { whatIf } from "../tools/what-if.js";
import { launchBrowser, openPage, setScrubber } from "./support/browser.js";

const LOG = "tests/fixtures/logs/old-98e2957.natlog";
const records: LogRecord[] = readLogSync(LOG).records;
let dashboard: Dashboard;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  dashboard = await startDashboard((await recordedLogModel(LOG)).model);
  browser = await launchBrowser();
  ({ page, errors } = await openPage(browser, dashboard.url));
  await page.waitForSelector("body[data-ready=true]", { timeout: 60_000 });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await dashboard?.close();
});

/** Each drawn state of `machine`: its name -> the count shown. */
async function drawnCounts(machine: string): Promise<Map<string, number>> {
  const nodes = page.locator(`#machines-slot g.state[data-machine="${machine}"]`);
  const shown = new Map<string, number>();
  for (let i = 0; i < (await nodes.count()); i++) {
    const node = nodes.nth(i);
    shown.set((await node.getAttribute("data-state"))!, Number(await node.getAttribute("data-count")));
  }
  return shown;
}

describe("the machines and what-if views, in Chromium", () => {
  it("draws every state of every machine definition, with the instances the log leaves in each", async () => {
    const expected = machinesView(records);
    for (const { machine } of MACHINE_DEFINITIONS) {
      const shown = await drawnCounts(machine.id);
      expect([...shown.keys()].sort()).toEqual(graphOf(machine).states.map((s) => s.id).sort());
      const counts = expected.machines.find((m) => m.id === machine.id)!.states;
      expect(Object.fromEntries(shown)).toEqual(Object.fromEntries(counts.map((s) => [s.id, s.count])));
    }
    // An edge per (from, to) pair; the rejected steal is taken, a never-taken edge is drawn faint.
    const rejected = page.locator('#machines-slot g.edge[data-machine=task][data-from="processing.stealing"][data-to="processing.assigned"]');
    expect(Number(await rejected.getAttribute("data-taken"))).toBeGreaterThan(0);
    expect(await page.locator("#machines-slot g.edge.never").count()).toBeGreaterThan(0);
    expect(await page.locator("#machines-slot g.edge:not(.never)").count()).toBeGreaterThan(0);
  });

  it("counts up to the scrubber's cut", async () => {
    const index = 120;
    await setScrubber(page, index);
    await page.waitForSelector(`#machines-slot .machines-view[data-records="${index}"]`, { timeout: 30_000 });
    const expected = machinesView(records, { index });
    const task = expected.machines.find((m) => m.id === "task")!;
    expect(Object.fromEntries(await drawnCounts("task"))).toEqual(Object.fromEntries(task.states.map((s) => [s.id, s.count])));
  });

  it("runs a what-if and shows the recorded and simulated streams with their makespans", async () => {
    await page.selectOption("#what-if-slot select[name=workStealing]", "off");
    await page.fill("#what-if-slot input[name=threads]", "1");
    await page.click("#what-if-slot button[type=submit]");
    await page.waitForSelector("#what-if-slot .what-if-view[data-state=done]", { timeout: 60_000 });
    const expected = whatIf(records, { changes: { workStealing: false } });
    const executions = records.filter((r) => r.kind === "transition" && r.machine === "wtask" && r.event === "EXECUTE").length;
    expect(Number(await page.getAttribute("#what-if-slot .what-if-recorded [data-bars]", "data-bars"))).toBe(executions);
    const simulatedBars = Number(await page.getAttribute("#what-if-slot .what-if-simulated [data-bars]", "data-bars"));
    expect(simulatedBars).toBeGreaterThan(0);
    // One thread per worker: as many lanes as workers.
    const lanes = Number(await page.getAttribute("#what-if-slot .what-if-simulated [data-lanes]", "data-lanes"));
    expect(lanes).toBe(Number(await page.getAttribute("#what-if-slot .what-if-simulated [data-workers]", "data-workers")));
    const view = page.locator("#what-if-slot .what-if-view");
    expect(Number(await view.getAttribute("data-recorded-makespan"))).toBe(expected.recorded.makespan);
    expect(Number(await view.getAttribute("data-simulated-makespan"))).toBeGreaterThan(0);
    const summary = await page.textContent("#what-if-slot .what-if-summary");
    expect(summary).toContain(`recorded makespan ${expected.recorded.makespan.toFixed(3)} s`);
    expect(summary).toMatch(/simulated \d+\.\d{3} s, ratio \d+\.\d\d/);
  });

  it("gives the recorded and simulated streams one zoom: a wheel or a drag on either moves both", async () => {
    const spans = async () => {
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      return page.$$eval("#what-if-slot .task-stream", (roots) => roots.map((r) => [Number((r as HTMLElement).dataset.t0), Number((r as HTMLElement).dataset.t1)]));
    };
    const [recorded, simulated] = await spans();
    expect(recorded).toEqual(simulated);
    const makespans = [Number(await page.getAttribute("#what-if-slot .what-if-view", "data-recorded-makespan")), Number(await page.getAttribute("#what-if-slot .what-if-view", "data-simulated-makespan"))];
    // Both show the longer run whole.
    expect(recorded![1]! - recorded![0]!).toBeGreaterThanOrEqual(Math.max(...makespans));
    const canvas = page.locator("#what-if-slot .what-if-simulated canvas");
    await page.locator("#what-if-slot .what-if-recorded canvas").scrollIntoViewIfNeeded();
    await canvas.scrollIntoViewIfNeeded();
    const box = (await canvas.boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.6, box.y + 20);
    await page.mouse.wheel(0, -300);
    const [zoomedRecorded, zoomedSimulated] = await spans();
    expect(zoomedSimulated![1]! - zoomedSimulated![0]!).toBeLessThan(recorded![1]! - recorded![0]!);
    expect(zoomedRecorded).toEqual(zoomedSimulated);
    const top = (await page.locator("#what-if-slot .what-if-recorded canvas").boundingBox())!;
    await page.mouse.move(top.x + top.width * 0.5, top.y + 20);
    await page.mouse.down();
    await page.mouse.move(top.x + top.width * 0.3, top.y + 20, { steps: 4 });
    await page.mouse.up();
    const [pannedRecorded, pannedSimulated] = await spans();
    expect(pannedRecorded![0]).toBeGreaterThan(zoomedRecorded![0]!);
    expect(pannedSimulated).toEqual(pannedRecorded);
  });

  it("logged no error in the page's console", () => {
    expect(errors).toEqual([]);
  });

  it("shows a bad setting's message from the server", async () => {
    await page.fill("#what-if-slot input[name=workerSaturation]", "-1");
    await page.click("#what-if-slot button[type=submit]");
    await page.waitForSelector("#what-if-slot .what-if-view[data-state=error]", { timeout: 30_000 });
    expect(await page.textContent("#what-if-slot .what-if-error")).toContain("config workerSaturation: must be > 0");
    // The browser reports the 400 itself; nothing else went wrong.
    expect(errors.filter((e) => !/status of 400/.test(e))).toEqual([]);
  });
});
