/**
 * `npm run build`'s last step: the page bundled into dist/dashboard/page/ (app.js beside
 * index.html and style.css), which the installed package serves without esbuild.
 */
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundle } from "./server/page-files.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const from = join(root, "dashboard", "page");
const to = join(root, "dist", "dashboard", "page");
await mkdir(to, { recursive: true });
await writeFile(join(to, "app.js"), await bundle(join(from, "main.ts")));
for (const file of ["index.html", "style.css"]) await copyFile(join(from, file), join(to, file));
