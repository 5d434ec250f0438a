/**
 * Task functions from a module, for the executor-thread tests: `functions:
 * "tests/support/cpu-tasks.mjs"` embedded, `--functions tests/support/cpu-tasks.mjs` on NATS.
 */
import { existsSync, writeFileSync } from "node:fs";
import { isMainThread, threadId } from "node:worker_threads";

const now = () => performance.timeOrigin + performance.now();

/** Pure CPU for `ms`; returns when it ran (wall-clock ms), measured inside the thread. */
export function spin(ms) {
  const start = now();
  let x = 0;
  while (now() - start < ms) x += Math.sqrt(x + 1);
  return { start, end: now(), threadId, mainThread: isMainThread };
}

/**
 * Marks `startedPath`, then keeps the CPU busy until `releasePath` exists (or `limitMs`
 * passed): "released" only if someone could create the file while this ran.
 */
export function spinUntil(releasePath, startedPath, limitMs = 20_000) {
  writeFileSync(startedPath, String(threadId));
  return spinUntilExists(releasePath, limitMs) ? "released" : "timed out";
}

/** Keeps the CPU busy until `path` exists (true) or `limitMs` passed (false). */
function spinUntilExists(path, limitMs) {
  const start = now();
  let x = 0;
  while (!existsSync(path)) {
    for (let i = 0; i < 10_000; i++) x += Math.sqrt(x + i);
    if (now() - start > limitMs) return false;
  }
  return true;
}

/**
 * Marks `minePath`, then keeps the CPU busy until `otherPath` exists (or `limitMs` passed):
 * two tasks meeting each other's paths both return `met` only if they ran at the same time,
 * however slowly either thread started.
 */
export function meet(minePath, otherPath, limitMs = 60_000) {
  writeFileSync(minePath, String(threadId));
  return { met: spinUntilExists(otherPath, limitMs), threadId, mainThread: isMainThread };
}

export function where() {
  return { threadId, mainThread: isMainThread };
}

/** A Float64Array of `n` values, element i = i. */
export function ramp(n) {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/** A new array, each value times `k`. */
export function scale(values, k) {
  const out = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i] * k;
  return out;
}

export function total(values) {
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i];
  return sum;
}

/** Several kinds of values at once: a buffer and a typed array move by transfer, the rest is cloned. */
export function mixed(n) {
  const buffer = new ArrayBuffer(n);
  new Uint8Array(buffer).fill(7);
  return { buffer, ints: Int32Array.from([1, 2, 3]), when: new Date(0), map: new Map([["a", 1]]), list: [1, "two", null] };
}

export function fail(message) {
  const error = new Error(message);
  error.code = "E_TASK";
  throw error;
}

export async function later(value) {
  await new Promise((resolve) => setTimeout(resolve, 1));
  return value;
}

export const notAFunction = 42;

/** Ends its executor thread (in a thread, process.exit stops only the thread). */
export function exitThread(code) {
  process.exit(code);
}

/** Not cloneable as a result. */
export function makeFunction() {
  return () => 1;
}

/** Keeps allocating heap (plain objects: a buffer's bytes live outside the heap) until its thread dies. */
export function hog() {
  const kept = [];
  for (;;) kept.push(Array.from({ length: 100_000 }, (_, i) => ({ i })));
}

/** Ends its thread the first time (no `markerPath` yet), returns "second run" after. */
export function exitOnce(markerPath) {
  if (!existsSync(markerPath)) {
    writeFileSync(markerPath, "");
    process.exit(1);
  }
  return "second run";
}

/** Throws from a timer, where no task promise catches it: the thread dies; this never settles. */
export function throwLater(message) {
  setTimeout(() => {
    throw new Error(message);
  }, 0);
  return new Promise(() => {});
}

/** Throws an error with the given `code`. */
export function failWithCode(code) {
  const error = new Error(`a task error posing as ${code}`);
  error.code = code;
  throw error;
}
