/**
 * Waiting on many futures, as Dask's `wait` and `as_completed`: built only on what a Future
 * already offers (its status and `wait()`), so they behave the same on every transport.
 */
import { checkTimeout } from "../machines/client/arguments.js";
import { BadOptionError, TimeoutError } from "../machines/errors.js";
import type { Future } from "./client.js";

export type ReturnWhen = "FIRST_COMPLETED" | "FIRST_EXCEPTION" | "ALL_COMPLETED";
const RETURN_WHEN: readonly ReturnWhen[] = ["FIRST_COMPLETED", "FIRST_EXCEPTION", "ALL_COMPLETED"];

export interface WaitOptions {
  /** When to return (Dask's `return_when`); default ALL_COMPLETED. */
  returnWhen?: ReturnWhen;
  /** Milliseconds; past it the call rejects with TimeoutError. Default: no limit. */
  timeout?: number;
}

export interface WaitResult<T = unknown> {
  done: Future<T>[];
  notDone: Future<T>[];
}

/** Done: finished, erred or cancelled. An exception: erred or cancelled (its result() rejects). */
const isDone = (f: Future): boolean => f.status !== "pending";
const isException = (f: Future): boolean => f.status === "error" || f.status === "cancelled";

function split<T>(futures: readonly Future<T>[]): WaitResult<T> {
  const done: Future<T>[] = [];
  const notDone: Future<T>[] = [];
  for (const f of futures) (isDone(f) ? done : notDone).push(f);
  return { done, notDone };
}

/**
 * Resolves with the futures done and not done once `returnWhen` holds: FIRST_COMPLETED (any is
 * done), FIRST_EXCEPTION (any erred or was cancelled, else all done), ALL_COMPLETED. Rejects
 * with TimeoutError after `timeout` ms. Erred futures count as done: it never rejects for them.
 */
export function waitFutures<T>(futures: readonly Future<T>[], opts: WaitOptions = {}): Promise<WaitResult<T>> {
  let timeout: number | undefined;
  let returnWhen: ReturnWhen;
  try {
    timeout = checkTimeout(opts);
    returnWhen = opts.returnWhen ?? "ALL_COMPLETED";
    if (!RETURN_WHEN.includes(returnWhen)) throw new BadOptionError("returnWhen", `one of ${RETURN_WHEN.join(", ")}, got ${JSON.stringify(returnWhen)}`);
  } catch (error) {
    return Promise.reject(error as Error);
  }
  const satisfied = (): boolean => {
    switch (returnWhen) {
      case "FIRST_COMPLETED":
        return futures.length === 0 || futures.some(isDone);
      case "FIRST_EXCEPTION":
        return futures.some(isException) || futures.every(isDone);
      case "ALL_COMPLETED":
        return futures.every(isDone);
    }
  };
  if (satisfied()) return Promise.resolve(split(futures));
  return new Promise<WaitResult<T>>((resolve, reject) => {
    let settled = false;
    const timer =
      timeout === undefined
        ? undefined
        : setTimeout(() => {
            settled = true;
            const left = futures.filter((f) => !isDone(f)).length;
            reject(new TimeoutError(`wait (${returnWhen}) after ${timeout} ms, ${left} of ${futures.length} futures not done`));
          }, timeout);
    for (const f of futures) {
      void f.wait().then(() => {
        if (settled || !satisfied()) return;
        settled = true;
        if (timer !== undefined) clearTimeout(timer);
        resolve(split(futures));
      });
    }
  });
}

export interface AsCompletedOptions {
  /** Yield `[future, result]` instead of the future (the result fetched from its worker). */
  withResults?: boolean;
  /**
   * With `withResults`: a failed future's error is thrown by the iteration (default true, as
   * Dask's `raise_errors`); false yields `[future, error]` instead.
   */
  raiseErrors?: boolean;
}

/**
 * The futures in the order they complete (Dask's `as_completed`): `for await (const f of
 * client.asCompleted(futures))`. `add()` takes more while iterating; the iteration ends when
 * every future added has been yielded.
 */
export class AsCompleted<T = unknown> implements AsyncIterable<Future<T> | [Future<T>, unknown]> {
  /** Completed, in completion order, not yet yielded. */
  private readonly ready: Future<T>[] = [];
  private pending = 0;
  private wake: (() => void) | null = null;
  private readonly withResults: boolean;
  private readonly raiseErrors: boolean;

  constructor(futures: Iterable<Future<T>> = [], opts: AsCompletedOptions = {}) {
    this.withResults = opts.withResults === true;
    this.raiseErrors = opts.raiseErrors !== false;
    for (const f of futures) this.add(f);
  }

  /** One more future to yield when it completes. */
  add(future: Future<T>): void {
    this.pending++;
    void future.wait().then(() => {
      this.pending--;
      this.ready.push(future);
      this.wake?.();
    });
  }

  /** Several more. */
  update(futures: Iterable<Future<T>>): void {
    for (const f of futures) this.add(f);
  }

  /** Futures added and not yet yielded. */
  count(): number {
    return this.pending + this.ready.length;
  }

  isEmpty(): boolean {
    return this.count() === 0;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Future<T> | [Future<T>, unknown]> {
    for (;;) {
      const next = this.ready.shift();
      if (next !== undefined) {
        if (!this.withResults) yield next;
        else yield [next, await this.resultOf(next)];
        continue;
      }
      if (this.pending === 0) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = null;
    }
  }

  private async resultOf(future: Future<T>): Promise<unknown> {
    try {
      return await future.result();
    } catch (error) {
      if (this.raiseErrors) throw error;
      return error;
    }
  }
}
