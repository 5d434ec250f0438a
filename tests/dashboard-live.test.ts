/**
 * The dashboard of an embedded cluster as it runs (LocalCluster.start({ dashboard: true })),
 * in headless Chromium: the page follows the run through server-sent events, with no reload.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalCluster } from "../index.js";
import { readLogSync } from "../log/reader.js";
import { machinesView } from "../dashboard/server/machines-handler.js";
import { DashboardModel } from "../dashboard/server/model.js";
import { launchBrowser, openPage } from "./support/browser.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const TASKS = 60;

let cluster: LocalCluster;
let browser: Browser;
let page: Page;
let errors: string[];

beforeAll(async () => {
  cluster = await LocalCluster.start({ workers: 2, functions: { nap: async (i: number) => (await sleep(25), i) }, dashboard: true, configFile: false });
  browser = await launchBrowser();
  ({ page, errors } = await openPage(browser, cluster.dashboardUrl!));
  await page.waitForSelector("body[data-ready=true]", { timeout: 60_000 });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await cluster?.close();
});

/** The "nap" progress row's tasks done (in memory or computed and released), or -1 before the row shows. */
const napDone = (): Promise<number> =>
  page.evaluate(() => {
    const row = document.querySelector<HTMLElement>("[data-prefix=nap]");
    return row ? Number(row.dataset.memory) + Number(row.dataset.released) : -1;
  });

describe("the dashboard of a live embedded cluster, in Chromium", () => {
  it("serves on 127.0.0.1 and shows the workers by name", async () => {
    expect(new URL(cluster.dashboardUrl!).hostname).toBe("127.0.0.1");
    await page.waitForSelector("tr[data-worker=worker-1]", { timeout: 30_000 });
    const names = await page.$$eval("tr[data-worker]", (rows) => rows.map((r) => (r as HTMLElement).dataset.worker));
    expect(names).toEqual(["worker-0", "worker-1"]);
    expect(await page.isVisible("#live")).toBe(true);
  });

  it("moves the progress and draws the bars as tasks finish", async () => {
    const client = cluster.client();
    const futures = Array.from({ length: TASKS }, (_, i) => client.submit<number>("nap", [i]));
    // Seen between the start and the end: the page moved while the run went on.
    const seen = new Set<number>();
    const watching = (async () => {
      for (let done = -1; done < TASKS; await sleep(20)) {
        done = await napDone();
        seen.add(done);
      }
    })();
    expect(await client.gather(futures)).toEqual(Array.from({ length: TASKS }, (_, i) => i));
    await Promise.race([watching, page.waitForFunction((n) => Number(document.querySelector<HTMLElement>("[data-prefix=nap]")?.dataset.memory) === n, TASKS, { timeout: 60_000 })]);
    await watching;
    const between = [...seen].filter((n) => n > 0 && n < TASKS);
    expect(between.length).toBeGreaterThan(0);
    await page.waitForFunction((n) => Number(document.querySelector<HTMLElement>("#stream-slot [data-bars]")?.dataset.bars) === n, TASKS, { timeout: 30_000 });
    const done = await page.$$eval("tr[data-worker]", (rows) => rows.reduce((sum, r) => sum + Number((r as HTMLElement).dataset.done), 0));
    expect(done).toBe(TASKS);
    await client.close();
  }, 120_000);

  it("answers the machines and a key's story from the log file it follows (it keeps no records), as the log says", async () => {
    const ask = async (path: string) => (await fetch(new URL(path, cluster.dashboardUrl!))).json() as Promise<Record<string, unknown>>;
    // The client closed above: its leaving (and the keys released for it) reaches the file
    // after a seal (up to 100 ms once the log goes quiet), and the dashboard after it follows
    // the file. Asked once the file has not grown for longer than that and the dashboard has
    // followed all of it, both say the same; asked before, a story could stop short of records
    // the file already had.
    for (let last = -1, still = 0, i = 0; i < 200; i++, await sleep(50)) {
      const now = readLogSync(cluster.logPath!).records.length;
      still = now === last ? still + 1 : 0;
      if (still >= 4 && (await ask("api/machines")).records === now) break;
      last = now;
    }
    const machines = await ask("api/machines");
    const counted = machines.records as number;
    const { records } = readLogSync(cluster.logPath!);
    expect(counted).toBeGreaterThan(0);
    expect(counted).toBeLessThanOrEqual(records.length);
    expect(machines).toEqual(JSON.parse(JSON.stringify(machinesView(records.slice(0, counted)))));
    const key = records.find((r) => r.kind === "transition" && r.machine === "task" && r.id.startsWith("nap-")) as { id: string };
    const kept = new DashboardModel({ kind: "embedded", location: cluster.logPath!, cluster: "c", live: true }, readLogSync(cluster.logPath!).header.created);
    for (const record of records) kept.add(record);
    expect(await ask(`api/story?key=${encodeURIComponent(key.id)}`)).toEqual(JSON.parse(JSON.stringify(await kept.story(key.id))));
  });

  it("runs its thread at a lower CPU priority than the cluster's (Linux: that thread's nice value alone)", () => {
    if (process.platform !== "linux") return;
    const niceOf = (tid: string) => {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
    };
    const nice = readdirSync("/proc/self/task").map(niceOf);
    expect(nice.filter((n) => n === 10).length).toBeGreaterThanOrEqual(1);
    expect(niceOf(readlinkSync("/proc/thread-self").split("/").pop()!)).toBe(0);
  });

  it("without a log file (log: false) taps the log sink instead, with the same answers", async () => {
    const bare = await LocalCluster.start({ workers: 2, functions: { nap: async (i: number) => (await sleep(5), i) }, dashboard: true, configFile: false, log: false });
    try {
      const client = bare.client();
      await client.gather(Array.from({ length: 20 }, (_, i) => client.submit<number>("nap", [i])));
      let done = 0;
      for (let i = 0; i < 600 && done < 20; i++) {
        await sleep(50);
        const summary = (await (await fetch(new URL("api/summary", bare.dashboardUrl!))).json()) as { now: { workers: { done: number }[] } };
        done = summary.now.workers.reduce((n, w) => n + w.done, 0);
      }
      expect(done).toBe(20);
      await client.close();
    } finally {
      await bare.close();
    }
  }, 60_000);

  it("logged no error in the page's console", () => {
    expect(errors).toEqual([]);
  });
});
