/// <reference lib="dom" />
// The functions given to page.evaluate run in the page: they use its DOM.
/**
 * The task-stream widget (dashboard/page/task-stream-view.ts) in headless Chromium, fed the
 * stream of a real run (a failure, stealing, a worker killed) through the wire form: a bar
 * per execution the log has, a lane per worker thread, a click on a bar that names its key,
 * drag and wheel that move and zoom the view, live deltas that add bars, and no errors in
 * the page's console.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LogRecord } from "../log/types.js";
import { encodeTaskStream, taskStreamOf, TaskStreamBuilder, type TaskStream } from "../tools/task-stream.js";
import { embeddedRun } from "./support/task-stream-runs.js";
import { launchChromium, openWidgetPage, widgetHtml, widgetScript } from "./support/widget-page.js";

let records: LogRecord[];
let stream: TaskStream;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  records = await embeddedRun();
  stream = taskStreamOf(records);
  browser = await launchChromium();
  ({ page, errors } = await openWidgetPage(browser, widgetHtml(await widgetScript())));
  await page.evaluate((wire) => (window as any).widget.set((window as any).decodeTaskStream(JSON.parse(wire))), JSON.stringify(encodeTaskStream(stream)));
}, 180_000);

afterAll(async () => {
  await browser?.close();
});

const attribute = (name: string) => page.$eval(".task-stream", (root, n) => (root as HTMLElement).dataset[n], name);

/** Where the widget draws `key`'s bar, in page coordinates. */
async function whereIs(key: string): Promise<{ x: number; y: number }> {
  const at = await page.evaluate((k) => {
    const p = (window as any).widget.locate(k);
    const rect = document.querySelector(".task-stream canvas")!.getBoundingClientRect();
    return p === null ? null : { x: rect.left + p.x, y: rect.top + p.y };
  }, key);
  expect(at).not.toBeNull();
  return at!;
}

describe("the task-stream widget in Chromium", () => {
  it("shows a bar per execution in the log and a lane per worker thread", async () => {
    const executions = records.filter((r) => r.kind === "transition" && r.actor.startsWith("worker.") && r.machine === "wtask" && r.event === "EXECUTE").length;
    expect(Number(await attribute("bars"))).toBe(executions);
    expect(Number(await attribute("lanes"))).toBe(2 + 2 + 1);
    expect(Number(await attribute("drawn"))).toBe(executions);
    const legend = await page.$eval(".task-stream-legend", (el) => el.textContent);
    for (const prefix of ["slow", "load", "boom", "sum"]) expect(legend).toContain(prefix);
    expect(await page.$eval(".task-stream-title", (el) => el.textContent)).toBe("Task stream");
  });

  it("calls onBar with the key of the bar clicked: the failed one, then one of the killed worker's", async () => {
    const failed = stream.bars.find((b) => b.outcome === "erred")!.key;
    const at = await whereIs(failed);
    await page.mouse.click(at.x, at.y);
    expect(await page.evaluate(() => (window as any).clicked)).toEqual([failed]);
    expect(await attribute("selected")).toBe(failed);
    const lost = stream.bars.find((b) => b.outcome === "lost")!.key;
    const there = await whereIs(lost);
    await page.mouse.click(there.x, there.y);
    expect(await page.evaluate(() => (window as any).clicked)).toEqual([failed, lost]);
  });

  it("zooms in on the wheel and pans on a drag, without a click", async () => {
    const key = stream.bars[Math.floor(stream.bars.length / 2)]!.key;
    const before = await whereIs(key);
    await page.mouse.move(before.x, before.y);
    for (let i = 0; i < 5; i++) await page.mouse.wheel(0, -200);
    await page.waitForFunction(() => Number((document.querySelector(".task-stream") as HTMLElement).dataset.drawn) < (window as any).widget.counts().bars);
    const zoomed = await whereIs(key);
    expect(Math.abs(zoomed.x - before.x)).toBeLessThan(20);
    await page.mouse.move(zoomed.x, zoomed.y);
    await page.mouse.down();
    await page.mouse.move(zoomed.x + 60, zoomed.y, { steps: 4 });
    await page.mouse.up();
    await page.waitForFunction(([k, x]) => Math.abs((window as any).widget.locate(k)?.x + document.querySelector(".task-stream canvas")!.getBoundingClientRect().left - (x as number) - 60) < 2, [key, zoomed.x] as const);
    expect(await page.evaluate(() => (window as any).clicked.length)).toBe(2);
    await page.dblclick(".task-stream canvas", { position: { x: 5, y: 5 } });
    await page.waitForFunction((n) => Number((document.querySelector(".task-stream") as HTMLElement).dataset.drawn) === n, stream.bars.length);
  });

  it("grows from live deltas: a builder's drains appended one after another end with every bar", async () => {
    await page.evaluate(() => (window as any).widget.set({ runStart: 0, end: 0, workers: [], bars: [], transfers: [], steals: [], deaths: [] }));
    expect(await attribute("bars")).toBe("0");
    const builder = new TaskStreamBuilder();
    const deltas: string[] = [];
    records.forEach((record, i) => {
      builder.add(record);
      if (i % 200 === 199) deltas.push(JSON.stringify(builder.drain()));
    });
    deltas.push(JSON.stringify(builder.drain()));
    for (const delta of deltas) await page.evaluate((d) => (window as any).widget.append(JSON.parse(d)), delta);
    expect(Number(await attribute("bars"))).toBe(stream.bars.length);
    expect(Number(await attribute("lanes"))).toBe(5);
    expect(await attribute("running")).toBe("0");
    await page.evaluate(() => (window as any).widget.setCursor(0.1));
    await page.waitForFunction((n) => Number((document.querySelector(".task-stream") as HTMLElement).dataset.drawn) === n, stream.bars.length);
  });

  it("logged no error in the page's console", () => {
    expect(errors).toEqual([]);
  });
});
