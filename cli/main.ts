#!/usr/bin/env node
import "../log/runtime-check.js";
import { runCli } from "./run.js";

process.exitCode = await runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(text + "\n"),
  err: (text) => process.stderr.write(text + "\n"),
});
