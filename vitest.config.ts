import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { filesNeeding, OUTSIDE_PROGRAMS, programsRequired } from "./tests/support/outside-programs.js";

/**
 * Test files that need a program this machine lacks (nats-server, ...) are left out, and the
 * run says which and how to install it; with NATSCHED_REQUIRE_PROGRAMS=1 (CI) they run, and fail.
 */
const root = import.meta.dirname;
const leftOut: string[] = [];
if (!programsRequired()) {
  for (const program of OUTSIDE_PROGRAMS) {
    if (program.find() !== undefined) continue;
    const files = filesNeeding(root, program);
    leftOut.push(...files);
    process.stderr.write(`natsched tests: ${program.name} not found: ${files.length} test files left out (install it: ${program.install})\n`);
  }
}

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    exclude: ["**/node_modules/**", ...leftOut],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // vitest's default is one file at a time on two cores (cores - 1). Most files here wait
    // more than they compute (nats-server, scheduler and worker processes, reconnects,
    // heartbeats), so two at a time fill two cores better; from three cores on, the default.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
