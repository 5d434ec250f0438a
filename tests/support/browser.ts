/**
 * Headless Chromium for the dashboard's browser tests: Debian's `chromium` (apt) driven by
 * playwright-core. A test file importing this is left out on a machine without chromium
 * (tests/support/outside-programs.ts) and fails in CI (NATSCHED_REQUIRE_PROGRAMS=1).
 */
import { chromium, type Browser, type Page } from "playwright-core";
import { OUTSIDE_PROGRAMS } from "./outside-programs.js";

const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

export async function launchBrowser(): Promise<Browser> {
  const executablePath = OUTSIDE_PROGRAMS.find((p) => p.name === "chromium")!.find();
  if (executablePath === undefined) throw new Error("chromium not found: apt-get install -y chromium");
  return chromium.launch({ executablePath, args: ARGS, headless: true });
}

/** A page that records every console error and uncaught exception, for the test to assert there were none. */
export async function openPage(browser: Browser, url: string, viewport = { width: 1400, height: 900 }): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport });
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => errors.push(`page: ${error.message}`));
  page.on("requestfailed", (request) => {
    // An event stream the page left open is cut when the test closes the server: not the page's fault.
    if (!request.url().endsWith("/api/events")) errors.push(`request: ${request.url()} ${request.failure()?.errorText ?? ""}`);
  });
  await page.goto(url);
  return { page, errors };
}

/** Sets the scrubber's slider to `index` as a user's drag would (an input event); the caller waits for what should follow. */
export async function setScrubber(page: Page, index: number): Promise<void> {
  await page.$eval(
    "#scrubber-slot input[type=range]",
    (slider, value) => {
      const input = slider as unknown as { value: string; dispatchEvent(e: unknown): boolean };
      input.value = String(value);
      input.dispatchEvent(new Event("input", { bubbles: true }));
    },
    index,
  );
}
