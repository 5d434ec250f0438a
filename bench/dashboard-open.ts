/// <reference lib="dom" />
// The functions given to page.evaluate run in the page: they use its DOM.
/**
 * How long the dashboard's task stream takes to open on a 100,000-task log in headless
 * Chromium: the page fetches the encoded stream over HTTP, parses and decodes it, and the
 * widget draws it whole (first full render, to the next painted frame). Then how long a
 * frame of panning takes: a drag step to its painted frame as the test driver sees it
 * (round trips included), and the widget's own drawing time for it. The log is W1-like
 * (no-op tasks, `--workers` x `--threads` on the embedded cluster), written once and
 * reused from `--log`.
 *
 * Then the whole path as a user counts it (bench/dashboard-command.ts): `natsched dashboard
 * <log>` spawned, to its URL, to the page's first full render; cold (no dashboard cache next
 * to the log: the server reads the log first) and warm (the cache the cold open wrote).
 * Say the machine's load (uptime) with the figures.
 *
 *   npx tsx bench/dashboard-open.ts [--tasks 100000] [--log /tmp/natsched-dashboard-100k.natlog] [--runs 3] [--command-runs 2] [--built]
 */
import { existsSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { LocalCluster } from "../index.js";
import { openLog } from "../log/reader.js";
import { encodeTaskStream, TaskStreamBuilder } from "../tools/task-stream.js";
import { launchChromium, widgetHtml, widgetScript } from "../tests/support/widget-page.js";
import { openByCommand, type CommandOpen } from "./dashboard-command.js";
import { FUNCTIONS } from "./functions.js";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "100000" },
    log: { type: "string", default: "/tmp/natsched-dashboard-100k.natlog" },
    runs: { type: "string", default: "3" },
    workers: { type: "string", default: "4" },
    threads: { type: "string", default: "2" },
    "command-runs": { type: "string", default: "2" },
    // The compiled CLI (dist/, as an installed package runs it) instead of the sources through tsx.
    built: { type: "boolean", default: false },
  },
});
const tasks = Number(values.tasks);
const runs = Number(values.runs);
if (!(tasks > 0) || !(runs > 0)) throw new Error("--tasks and --runs take positive numbers");

if (!existsSync(values.log)) await writeLog(values.log, tasks);

const folded = performance.now();
const reader = await openLog(values.log);
const builder = new TaskStreamBuilder();
for await (const record of reader.records()) builder.add(record);
const stream = builder.snapshot();
const foldMs = performance.now() - folded;
const body = JSON.stringify(encodeTaskStream(stream));
const html = widgetHtml(await widgetScript());

const server = createServer((req, res) => {
  if (req.url === "/stream") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(body);
  } else {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(html);
  }
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

const browser = await launchChromium();
const commandRuns = Number(values["command-runs"]);
const opens: CommandOpen[] = [];
const results: { fetchMs: number; decodeMs: number; renderMs: number; totalMs: number; panFrameMs: number; panDrawMs: number }[] = [];
try {
  for (let run = 0; run < runs; run++) {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto(url);
    const timing = await page.evaluate(async () => {
      const w = window as any;
      const t0 = performance.now();
      const wire = await (await fetch("/stream")).json();
      const t1 = performance.now();
      const decoded = w.decodeTaskStream(wire);
      const t2 = performance.now();
      w.widget.set(decoded);
      // No named functions in here: tsx's keepNames would wrap them in a helper the page lacks.
      await new Promise((resolve) => requestAnimationFrame(resolve));
      const t3 = performance.now();
      return { fetchMs: t1 - t0, decodeMs: t2 - t1, renderMs: t3 - t2, totalMs: t3 - t0, bars: w.widget.counts().bars };
    });
    if (timing.bars !== stream.bars.length) throw new Error(`the widget holds ${timing.bars} bars, the stream ${stream.bars.length}`);
    // Pan: drag across the middle of the lanes in steps, one frame each.
    const box = (await page.$eval(".task-stream canvas", (c) => c.getBoundingClientRect().toJSON())) as { left: number; top: number; width: number };
    const y = box.top + 40;
    await page.mouse.move(box.left + box.width / 2, y);
    await page.mouse.down();
    const frames: number[] = [];
    const draws: number[] = [];
    for (let step = 1; step <= 20; step++) {
      const started = performance.now();
      await page.mouse.move(box.left + box.width / 2 - step * 15, y);
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      frames.push(performance.now() - started);
      draws.push(Number(await page.$eval(".task-stream", (root) => (root as HTMLElement).dataset.drawMs)));
    }
    await page.mouse.up();
    frames.sort((a, b) => a - b);
    if (errors.length > 0) throw new Error(`page errors: ${errors.join("; ")}`);
    draws.sort((a, b) => a - b);
    results.push({ ...timing, panFrameMs: frames[Math.floor(frames.length / 2)]!, panDrawMs: draws[Math.floor(draws.length / 2)]! });
    await page.close();
  }
  for (let run = 0; run < commandRuns; run++) {
    opens.push(await openByCommand(browser, values.log, "cold", values.built ? "built" : "source"));
    opens.push(await openByCommand(browser, values.log, "warm", values.built ? "built" : "source"));
    if (opens.some((o) => o.bars !== stream.bars.length)) throw new Error(`the page drew ${opens.map((o) => o.bars).join(", ")} bars, the log has ${stream.bars.length}`);
  }
} finally {
  await browser.close();
  server.close();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (x: number) => Math.round(x);
console.log(
  JSON.stringify({
    log: values.log,
    logMiB: Number((statSync(values.log).size / 2 ** 20).toFixed(1)),
    bars: stream.bars.length,
    lanes: stream.workers.reduce((n, w) => n + w.lanes, 0),
    wireMiB: Number((body.length / 2 ** 20).toFixed(2)),
    foldMs: round(foldMs),
    runs,
    medianFetchMs: round(median(results.map((r) => r.fetchMs))),
    medianDecodeMs: round(median(results.map((r) => r.decodeMs))),
    medianRenderMs: round(median(results.map((r) => r.renderMs))),
    medianOpenMs: round(median(results.map((r) => r.totalMs))),
    maxOpenMs: round(Math.max(...results.map((r) => r.totalMs))),
    medianPanStepMs: round(median(results.map((r) => r.panFrameMs))),
    medianPanDrawMs: median(results.map((r) => r.panDrawMs)),
  }),
);
for (const cache of ["cold", "warm"] as const) {
  const these = opens.filter((o) => o.cache === cache);
  if (these.length === 0) continue;
  // From `natsched dashboard <log>`'s start: its URL, the page's first full render, every view loaded.
  console.log(
    JSON.stringify({
      command: `natsched dashboard ${values.log}`,
      cli: values.built ? "built (dist/cli/main.js)" : "source (bin/natsched.mjs, tsx)",
      cache,
      runs: these.length,
      urlMs: these.map((o) => round(o.urlMs)),
      urlCpuMs: these.map((o) => round(o.urlCpuMs)),
      renderMs: these.map((o) => round(o.renderMs)),
      renderCpuMs: these.map((o) => round(o.renderCpuMs)),
      readyMs: these.map((o) => round(o.readyMs)),
    }),
  );
}

/** A W1-like log: `n` no-op tasks in rounds of 20,000 (map, gather, release). */
async function writeLog(path: string, n: number): Promise<void> {
  const started = performance.now();
  const cluster = await LocalCluster.start({ workers: Number(values.workers), threadsPerWorker: Number(values.threads), functions: FUNCTIONS, log: { path }, configFile: false });
  const client = cluster.client();
  for (let done = 0; done < n; ) {
    const batch = Math.min(20_000, n - done);
    const futures = client.map("noop", Array.from({ length: batch }, (_, i) => done + i), { pure: false });
    await client.gather(futures);
    for (const f of futures) f.release();
    done += batch;
    console.error(`  ${done} tasks, ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  await cluster.close();
}
