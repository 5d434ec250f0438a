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
  // The daemons turn V8's memory reducer off before any thread starts (cli/daemon-heap.ts):
  // here tsx's loader thread starts first, so the flag goes before it.
  if (process.argv[2] === "worker" || process.argv[2] === "scheduler") (await import("node:v8")).setFlagsFromString("--no-memory-reducer");
  const { register } = await import("tsx/esm/api");
  register();
  // Executor threads register tsx's hooks themselves when they know (actors/executor/thread-hooks.ts).
  globalThis[Symbol.for("natsched.tsx-registered")] = true;
  await import(pathToFileURL(source).href);
} else {
  await import(pathToFileURL(join(root, "dist", "cli", "main.js")).href);
}
