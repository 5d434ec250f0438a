/** The server's answers as the page reads them (dashboard/server/model.ts and dash-fold.ts write them). */

export type { AtAnswer, ClusterAt, ProgressRow, Summary, WorkerRow } from "../server/wire-types.js";

export interface StoryLine {
  t: number;
  actor: string;
  seq: number;
  text: string;
  reasons?: string[];
  cause?: string;
  stack?: string[];
}

export interface Story {
  key: string;
  lines: StoryLine[];
  /** Set when a live dashboard no longer keeps the key's first records. */
  partial?: string;
}

export async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(path);
  const body = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `${path}: ${res.status}`);
  return body;
}

export function seconds(s: number): string {
  return `${s.toFixed(3)} s`;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

/** An element with a class and text, the page's one DOM helper. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
