/**
 * The task-stream widget alone on a page in headless Chromium (Debian's /usr/bin/chromium,
 * driven by playwright-core): the widget bundled by esbuild with the wire decoder, and a
 * page-side `window.stream` API to feed it. For the widget's browser test and bench.
 */
import { join } from "node:path";
import { build } from "esbuild";
import { chromium, type Browser, type Page } from "playwright-core";

const ROOT = join(import.meta.dirname, "..", "..");

export const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: CHROMIUM_ARGS });
}

/** The widget and decoder as one script: `window.widget` mounted in #app, `window.decodeTaskStream`, `window.clicked` (keys onBar got). */
export async function widgetScript(): Promise<string> {
  const result = await build({
    stdin: {
      contents: `
        import { mountTaskStream } from "./dashboard/page/task-stream-view.ts";
        import { decodeTaskStream } from "./tools/task-stream-wire.ts";
        const w = window as any;
        w.clicked = [];
        w.decodeTaskStream = decodeTaskStream;
        w.widget = mountTaskStream(document.getElementById("app")!, { title: "Task stream", onBar: (key: string) => w.clicked.push(key) });
      `,
      resolveDir: ROOT,
      loader: "ts",
      sourcefile: "widget-page.ts",
    },
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "es2022",
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}

export function widgetHtml(script: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>task stream</title></head>
<body style="margin: 8px; font-family: system-ui"><div id="app" style="width: 1200px"></div><script>${script.replace(/<\/script/gi, "<\\/script")}</script></body></html>`;
}

/** A page that collects its console errors and uncaught exceptions into `errors`. */
export async function openWidgetPage(browser: Browser, html: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.setContent(html);
  return { page, errors };
}
