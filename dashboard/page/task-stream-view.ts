/**
 * The task-stream widget: a canvas with a lane per worker thread and a bar per execution
 * (tools/task-stream.ts has what the bars mean). Drag pans, the wheel zooms around the
 * pointer, a double click shows the whole run again; a click on a bar calls `onBar(key)`,
 * hovering shows what the bar was. Only what is in view is drawn, on the next animation
 * frame after a change (the first `set` draws at once).
 *
 * The root element carries `data-bars` and `data-lanes` (what the stream holds) and
 * `data-selected` (the key last clicked), for tests and for people reading the DOM.
 */
import type { StreamBar, TaskStream, TaskStreamDelta } from "../../tools/task-stream-types.js";
import { drawStream } from "./stream-draw.js";
import { Geometry, LABEL_WIDTH } from "./stream-geometry.js";
import { StreamIndex } from "./stream-index.js";
import { prefixColour as prefixColourOf } from "./prefix-colours.js";

export interface TaskStreamView {
  set(stream: TaskStream): void;
  append(delta: TaskStreamDelta): void;
  /** The time span shown (seconds from the run's start). */
  view(): TimeSpan;
  /** Shows `span` (null: the whole run), without calling onView: how two widgets share one zoom. */
  setView(span: TimeSpan | null): void;
  /** A vertical line at `t` (seconds from the run's start), or none. */
  setCursor(t: number | null): void;
  counts(): { bars: number; lanes: number };
  /** Where `key`'s latest bar is drawn now, in the canvas's CSS pixels (null when out of view). */
  locate(key: string): { x: number; y: number } | null;
  destroy(): void;
}

export interface TimeSpan {
  t0: number;
  t1: number;
}

export interface TaskStreamOptions {
  onBar?(key: string): void;
  /** The person panned or zoomed (or double-clicked for the whole run): the span now shown. */
  onView?(span: TimeSpan): void;
  title?: string;
}

/** Pointer travel (px) under which a press and release is a click, not a drag. */
const CLICK_SLOP = 4;
/** How close (px) to a bar a click still picks it. */
const HIT_SLOP = 3;

export function mountTaskStream(parent: HTMLElement, opts: TaskStreamOptions = {}): TaskStreamView {
  const root = document.createElement("div");
  root.className = "task-stream";
  root.style.position = "relative";
  if (opts.title !== undefined) {
    const title = document.createElement("h3");
    title.className = "task-stream-title";
    title.textContent = opts.title;
    root.append(title);
  }
  const legend = document.createElement("div");
  legend.className = "task-stream-legend";
  legend.style.cssText = "font: 11px system-ui, sans-serif; display: flex; flex-wrap: wrap; gap: 4px 12px; margin: 2px 0 4px";
  const canvas = document.createElement("canvas");
  canvas.style.cssText = "display: block; width: 100%; cursor: grab; touch-action: none";
  const tip = document.createElement("div");
  tip.className = "task-stream-tip";
  tip.style.cssText = "position: absolute; display: none; pointer-events: none; background: #fff; border: 1px solid #999; padding: 3px 6px; font: 11px system-ui, sans-serif; white-space: pre; z-index: 2";
  root.append(legend, canvas, tip);
  parent.append(root);
  const ctx = canvas.getContext("2d")!;

  const index = new StreamIndex();
  let view = { t0: 0, t1: 1 };
  /** The view shows the run up to its end: live data widens it. */
  let following = true;
  let cursor: number | null = null;
  let selected = -1;
  let geometry = new Geometry(800, 0, 0, 1);
  let frame = 0;
  let prefixesShown = "";

  const width = () => Math.max(root.clientWidth || parent.clientWidth || 800, 200);

  function draw(): void {
    frame = 0;
    geometry = new Geometry(width(), index.rows.length, view.t0, view.t1);
    const dpr = window.devicePixelRatio || 1;
    const w = Math.round(geometry.width * dpr);
    const h = Math.round(geometry.height * dpr);
    if (canvas.width !== w || canvas.height !== h) {
      canvas.width = w;
      canvas.height = h;
      canvas.style.height = `${geometry.height}px`;
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const started = performance.now();
    const stats = drawStream(ctx, index, geometry, cursor, selected);
    root.dataset.drawMs = (performance.now() - started).toFixed(1);
    root.dataset.t0 = String(view.t0);
    root.dataset.t1 = String(view.t1);
    root.dataset.drawn = String(stats.bars);
    root.dataset.rects = String(stats.rects);
  }

  function redraw(): void {
    if (frame === 0) frame = requestAnimationFrame(draw);
  }

  function fullView(): void {
    const span = Math.max(index.end, 1e-3);
    view = { t0: -span * 0.01, t1: span * 1.01 };
    following = true;
  }

  function updated(): void {
    root.dataset.bars = String(index.bars.length);
    root.dataset.lanes = String(index.rows.length);
    root.dataset.workers = String(index.workers.length);
    root.dataset.running = String(index.running.length);
    updateLegend();
  }

  function updateLegend(): void {
    const counts = new Map<string, number>();
    for (const bar of index.bars) counts.set(bar.prefix, (counts.get(bar.prefix) ?? 0) + 1);
    const shown = [...counts.keys()].sort().join("\u0000");
    if (shown === prefixesShown) return;
    prefixesShown = shown;
    legend.replaceChildren();
    const entries = [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 24);
    for (const [prefix] of entries) legend.append(swatch(prefix));
    legend.append(key("failed", "#d62728"), key("lost / cancelled (crossed)", "#fff"), key("transfer", "rgba(120,60,170,0.6)"), key("steal", "#e6550d"));
  }

  function barAt(clientX: number, clientY: number): number {
    const rect = canvas.getBoundingClientRect();
    const x = clientX - rect.left;
    const row = geometry.row(clientY - rect.top);
    if (row < 0 || x < LABEL_WIDTH) return -1;
    return index.hit(row, geometry.t(x), HIT_SLOP * geometry.scale);
  }

  // Pan: drag. A press released where it started is a click.
  let drag: { x: number; y: number; t0: number; t1: number; moved: boolean } | null = null;
  canvas.addEventListener("pointerdown", (e) => {
    drag = { x: e.clientX, y: e.clientY, t0: view.t0, t1: view.t1, moved: false };
    canvas.setPointerCapture(e.pointerId);
    canvas.style.cursor = "grabbing";
  });
  canvas.addEventListener("pointermove", (e) => {
    if (drag === null) {
      hover(e);
      return;
    }
    const dx = e.clientX - drag.x;
    if (Math.abs(dx) + Math.abs(e.clientY - drag.y) > CLICK_SLOP) drag.moved = true;
    if (!drag.moved) return;
    const shift = (dx / geometry.plotWidth) * (drag.t1 - drag.t0);
    view = { t0: drag.t0 - shift, t1: drag.t1 - shift };
    following = false;
    opts.onView?.({ ...view });
    tip.style.display = "none";
    redraw();
  });
  const release = (e: PointerEvent) => {
    if (drag === null) return;
    const click = !drag.moved;
    drag = null;
    canvas.style.cursor = "grab";
    if (canvas.hasPointerCapture(e.pointerId)) canvas.releasePointerCapture(e.pointerId);
    if (!click || e.type === "pointercancel") return;
    const hit = barAt(e.clientX, e.clientY);
    if (hit < 0) return;
    selected = hit;
    const key = index.bars[hit]!.key;
    root.dataset.selected = key;
    redraw();
    opts.onBar?.(key);
  };
  canvas.addEventListener("pointerup", release);
  canvas.addEventListener("pointercancel", release);
  canvas.addEventListener("pointerleave", () => {
    tip.style.display = "none";
  });

  // Zoom: the wheel, around the time under the pointer.
  canvas.addEventListener(
    "wheel",
    (e) => {
      e.preventDefault();
      const rect = canvas.getBoundingClientRect();
      const at = geometry.t(Math.max(e.clientX - rect.left, LABEL_WIDTH));
      const factor = Math.exp(Math.max(-1, Math.min(1, (e.deltaY + e.deltaX) * 0.002)));
      const span = Math.min(Math.max((view.t1 - view.t0) * factor, 1e-6), Math.max(index.end, 1e-3) * 4);
      const left = (at - view.t0) / (view.t1 - view.t0);
      view = { t0: at - left * span, t1: at + (1 - left) * span };
      following = false;
      opts.onView?.({ ...view });
      redraw();
    },
    { passive: false },
  );
  canvas.addEventListener("dblclick", () => {
    fullView();
    opts.onView?.({ ...view });
    redraw();
  });

  function hover(e: PointerEvent): void {
    const hit = barAt(e.clientX, e.clientY);
    if (hit < 0) {
      tip.style.display = "none";
      return;
    }
    const bar = index.bars[hit]!;
    tip.textContent = describe(bar);
    const rect = root.getBoundingClientRect();
    tip.style.left = `${Math.min(e.clientX - rect.left + 12, rect.width - 260)}px`;
    tip.style.top = `${e.clientY - rect.top + 14}px`;
    tip.style.display = "block";
  }

  const resize = new ResizeObserver(() => redraw());
  resize.observe(root);

  return {
    set(stream) {
      index.set(stream);
      selected = -1;
      delete root.dataset.selected;
      fullView();
      updated();
      if (frame !== 0) cancelAnimationFrame(frame);
      draw();
    },
    append(delta) {
      const wasFollowing = following;
      index.append(delta);
      if (wasFollowing) fullView();
      updated();
      redraw();
    },
    view() {
      return { ...view };
    },
    setView(span) {
      if (span === null) fullView();
      else {
        view = { t0: span.t0, t1: span.t1 };
        following = false;
      }
      redraw();
    },
    setCursor(t) {
      cursor = t;
      redraw();
    },
    counts() {
      return { bars: index.bars.length, lanes: index.rows.length };
    },
    locate(key) {
      for (let i = index.bars.length - 1; i >= 0; i--) {
        const bar = index.bars[i]!;
        if (bar.key !== key) continue;
        const rows = index.rowsOf(bar.worker);
        const mid = (Math.max(bar.start, view.t0) + Math.min(bar.end, view.t1)) / 2;
        if (rows === undefined || bar.end < view.t0 || bar.start > view.t1) return null;
        return { x: geometry.x(mid), y: geometry.y(rows.first + bar.lane) + geometry.rowHeight / 2 };
      }
      return null;
    },
    destroy() {
      resize.disconnect();
      if (frame !== 0) cancelAnimationFrame(frame);
      root.remove();
    },
  };
}

function describe(bar: StreamBar): string {
  const ms = (s: number) => `${(s * 1000).toFixed(s < 0.01 ? 2 : 1)} ms`;
  return `${bar.key}\n${bar.worker} thread ${bar.lane} · ${bar.outcome}\n${bar.start.toFixed(4)}s → ${bar.end.toFixed(4)}s (${ms(bar.end - bar.start)})`;
}

function swatch(prefix: string): HTMLElement {
  return key(prefix, "", prefix);
}

function key(label: string, colour: string, prefix?: string): HTMLElement {
  const item = document.createElement("span");
  const box = document.createElement("span");
  box.style.cssText = "display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; border: 1px solid #0003";
  box.style.background = prefix !== undefined ? prefixColourOf(prefix) : colour;
  item.append(box, label);
  return item;
}
