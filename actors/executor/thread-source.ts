/**
 * The program of an executor thread, run with `new Worker(THREAD_SOURCE, { eval: true })`.
 * It is a string, not a file, so that the same code starts a thread under tsx, under vitest
 * and from the built `dist/` (a `.ts` thread file would not load outside tsx, and the build
 * copies no `.js` files).
 *
 * The thread registers module hooks if it must (thread-hooks.ts), imports its modules once
 * (it is kept warm), then runs one job at a time:
 * `{ id, module, func, args }` in, `{ id, ok, value | error }` out. A result's ArrayBuffers
 * (and those under its typed arrays, one level into arrays, plain objects and Maps) move back
 * by transfer; a buffer that cannot be transferred (Node's shared Buffer pool) is copied.
 * A module's functions are read as function-modules.ts reads them: the functions of its
 * default export (an object), then its named function exports.
 */
/** What an executor thread calls itself on Linux (/proc/<pid>/task/<tid>/comm, at most 15 bytes). */
export const EXECUTOR_THREAD_NAME = "natsched-exec";

export const THREAD_SOURCE = String.raw`
"use strict";
const { parentPort, workerData } = require("node:worker_threads");

function exportedFunctions(module) {
  const functions = Object.create(null);
  const fromDefault = module.default;
  if (typeof fromDefault === "object" && fromDefault !== null) {
    for (const [name, value] of Object.entries(fromDefault)) if (typeof value === "function") functions[name] = value;
  }
  for (const [name, value] of Object.entries(module)) {
    if (name !== "default" && typeof value === "function") functions[name] = value;
  }
  return functions;
}

const hooks = workerData.hooks === undefined ? Promise.resolve() : import(workerData.hooks).then((api) => api.register());
const modules = hooks
  .then(() => Promise.all(workerData.modules.map((url) => import(url).then((m) => [url, exportedFunctions(m)]))))
  .then((entries) => new Map(entries));
modules.catch(() => undefined);
// Linux: the thread names itself, so that top -H and ps -L tell executors apart from the
// worker's own threads (and the bench can count their CPU); after its module hooks have
// started their own thread, which would take the name too. Elsewhere there is no such file.
modules.then(() => {
  try {
    require("node:fs").writeFileSync("/proc/thread-self/comm", "${EXECUTOR_THREAD_NAME}");
  } catch {}
}, () => undefined);

function bufferOf(value) {
  if (value instanceof ArrayBuffer) return value;
  if (ArrayBuffer.isView(value) && value.buffer instanceof ArrayBuffer) return value.buffer;
  return undefined;
}

function transferables(value) {
  const found = new Set();
  const add = (v) => {
    const buffer = bufferOf(v);
    if (buffer !== undefined && buffer.byteLength > 0) found.add(buffer);
  };
  add(value);
  if (Array.isArray(value)) value.forEach(add);
  else if (value instanceof Map) value.forEach(add);
  else if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype) Object.values(value).forEach(add);
  return [...found];
}

function errorInfo(error) {
  if (error instanceof Error) {
    return { name: error.name, message: error.message, ...(typeof error.code === "string" ? { code: error.code } : {}), ...(typeof error.stack === "string" ? { stack: error.stack } : {}) };
  }
  return { name: "Error", message: String(error) };
}

function reply(id, value) {
  const transfer = transferables(value);
  try {
    parentPort.postMessage({ id, ok: true, value }, transfer);
    return;
  } catch {}
  try {
    parentPort.postMessage({ id, ok: true, value });
  } catch (error) {
    parentPort.postMessage({ id, ok: false, error: { name: "DataCloneError", message: "the result cannot be sent from the executor thread: " + errorInfo(error).message } });
  }
}

parentPort.on("message", async (job) => {
  let value;
  try {
    const fn = (await modules).get(job.module)?.[job.func];
    if (typeof fn !== "function") throw new Error("executor thread: " + job.module + " exports no function " + job.func);
    value = await fn(...job.args);
  } catch (error) {
    parentPort.postMessage({ id: job.id, ok: false, error: errorInfo(error) });
    return;
  }
  reply(job.id, value);
});
`;
