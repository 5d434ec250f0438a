/**
 * The page's files: in a clone, dashboard/page/ bundled by esbuild when the server starts
 * (so the page is never stale); in the installed package, the bundle `npm run build` wrote
 * next to the compiled server (dist/dashboard/page/), as esbuild is not a dependency.
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface PageFiles {
  html: string;
  script: string;
  css: string;
}

const PAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "page");

export async function pageFiles(): Promise<PageFiles> {
  const html = await readFile(join(PAGE_DIR, "index.html"), "utf8");
  const css = await readFile(join(PAGE_DIR, "style.css"), "utf8");
  const source = join(PAGE_DIR, "main.ts");
  if (existsSync(source)) return { html, css, script: await bundle(source) };
  return { html, css, script: await readFile(join(PAGE_DIR, "app.js"), "utf8") };
}

/** The page's script as one file for the browser: no CDN, no module loader. */
export async function bundle(entry: string): Promise<string> {
  const esbuild = await import("esbuild");
  const result = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "es2022",
    minify: true,
    sourcemap: "inline",
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}
