#!/usr/bin/env node
// The `natsched` command. In a clone of the repository (the TypeScript sources are next to
// it) it runs the sources through tsx, so `npx natsched` works right after `npm ci`, without a
// build, and never runs a stale build; in an installed package it runs the compiled dist/.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = join(root, "cli", "main.ts");
if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  // Executor threads register tsx's hooks themselves when they know (actors/executor/thread-hooks.ts).
  globalThis[Symbol.for("natsched.tsx-registered")] = true;
  await import(pathToFileURL(source).href);
} else {
  await import(pathToFileURL(join(root, "dist", "cli", "main.js")).href);
}
