/**
 * `natsched dashboard <log>` as a user starts it, timed from the command's start: spawned
 * as `node bin/natsched.mjs dashboard <log>`, the time until it prints its URL, and until
 * the page (headless Chromium, opened as soon as the URL is out) has drawn the whole log's
 * task stream and summary (`body[data-rendered]`, the first full render). Cold: without
 * the dashboard's cache next to the log (`<log>.dash`), so the log is read before the whole
 * stream is drawn; warm: with the cache the cold run wrote. Each open is a fresh process.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";

const ROOT = join(import.meta.dirname, "..");

export interface CommandOpen {
  cache: "cold" | "warm";
  /** Command start to the URL printed. */
  urlMs: number;
  /** The command's CPU time (all its threads) up to the URL and up to the first full render. */
  urlCpuMs: number;
  renderCpuMs: number;
  /** Command start to the first full render. */
  renderMs: number;
  /** Command start to the page's every view loaded (the server has read the whole log). */
  readyMs: number;
  bars: number;
}

/**
 * One open of `log` by the command: cold removes the cache first. `cli`: "source" runs
 * bin/natsched.mjs as in a clone (the sources through tsx), "built" the compiled
 * dist/cli/main.js an installed package runs (`npm run build` first).
 */
export async function openByCommand(browser: Browser, log: string, cache: "cold" | "warm", cli: "source" | "built" = "source"): Promise<CommandOpen> {
  if (cache === "cold") rmSync(`${log}.dash`, { force: true });
  else if (!existsSync(`${log}.dash`)) throw new Error(`no cache next to ${log}: run a cold open first`);
  const program = cli === "built" ? join(ROOT, "dist", "cli", "main.js") : join(ROOT, "bin", "natsched.mjs");
  if (!existsSync(program)) throw new Error(`${program} is missing (npm run build)`);
  const started = performance.now();
  // DASH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=dir": node flags for the command (NODE_OPTIONS refuses --cpu-prof).
  const nodeFlags = process.env.DASH_NODE_FLAGS?.split(" ").filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeFlags, program, "dashboard", log], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString("utf8");
        const found = /http:\/\/\S+\//.exec(out);
        if (found) resolve(found[0]);
      });
      child.once("exit", (code) => reject(new Error(`natsched dashboard exited (${code}) before printing its URL`)));
    });
    const urlMs = performance.now() - started;
    const urlCpuMs = cpuMs(child.pid!);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto(url);
    await page.waitForSelector("body[data-rendered=true]", { timeout: 300_000 });
    const renderMs = performance.now() - started;
    const renderCpuMs = cpuMs(child.pid!);
    const bars = Number(await page.$eval(".task-stream", (root) => (root as HTMLElement).dataset.bars));
    await page.waitForSelector("body[data-ready=true]", { timeout: 300_000 });
    const readyMs = performance.now() - started;
    if (errors.length > 0) throw new Error(`page errors: ${errors.join("; ")}`);
    await page.close();
    return { cache, urlMs, urlCpuMs, renderMs, renderCpuMs, readyMs, bars };
  } finally {
    child.kill("SIGINT");
    await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once("exit", resolve)));
  }
}

/** A process's CPU time so far (user + system, all threads), from /proc (Linux). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of stat: 12 and 13 after the command's name and state.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}
