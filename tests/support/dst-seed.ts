/**
 * The DST campaigns' seed and fixtures directory, shared by tests/verify-dst.test.ts and
 * tests/verify-dst-faults.test.ts: a fixed seed so the suite is repeatable; DST_SEED=<n> (or
 * "random") runs the campaigns from another one.
 */
import { join } from "node:path";

export const FIXTURES = join(import.meta.dirname, "..", "fixtures", "dst");
export const SEED = seedFromEnv(process.env.DST_SEED, 20_250_611);

function seedFromEnv(value: string | undefined, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  if (value === "random") return Math.floor(Math.random() * 2 ** 31);
  const seed = Number(value);
  if (!Number.isSafeInteger(seed)) throw new Error(`DST_SEED must be a whole number or "random", got ${value}`);
  return seed;
}
