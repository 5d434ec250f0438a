/**
 * Draws the task stream in view onto a canvas: lanes with their labels, bars coloured by
 * prefix (failures red, lost and cancelled work faded and crossed), transfers as lines from
 * sender to receiver, steals as arrows from victim to thief, deaths across the dead worker's
 * lanes, the time axis and the cursor. Bars narrower than a pixel are merged into one
 * rectangle per pixel run, so a frame costs the pixels in view, not the bars.
 */
import type { StreamBar } from "../../tools/task-stream-types.js";
import { AXIS_HEIGHT, Geometry, LABEL_WIDTH } from "./stream-geometry.js";
import { FAILURE_COLOUR, prefixColour } from "./prefix-colours.js";
import type { StreamIndex } from "./stream-index.js";

export interface DrawStats {
  /** Bars in view (drawn on their own or merged into a neighbour's pixels). */
  bars: number;
  rects: number;
}

const FONT = "11px system-ui, sans-serif";

export function drawStream(ctx: CanvasRenderingContext2D, index: StreamIndex, g: Geometry, cursor: number | null, selected: number): DrawStats {
  const stats: DrawStats = { bars: 0, rects: 0 };
  ctx.clearRect(0, 0, g.width, g.height);
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  drawLanes(ctx, index, g);
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_WIDTH, 0, g.plotWidth, g.axisY);
  ctx.clip();
  for (let row = 0; row < index.rows.length; row++) drawRow(ctx, index, g, row, stats);
  drawRunning(ctx, index, g);
  for (const i of index.marked) {
    const bar = index.bars[i]!;
    if (bar.end >= g.t0 && bar.start <= g.t1) drawMarked(ctx, index, g, bar);
  }
  drawDeaths(ctx, index, g);
  drawTransfers(ctx, index, g);
  drawSteals(ctx, index, g);
  if (selected >= 0) outline(ctx, index, g, index.bars[selected]!);
  ctx.restore();
  drawAxis(ctx, g);
  if (cursor !== null && cursor >= g.t0 && cursor <= g.t1) {
    ctx.fillStyle = "#111";
    ctx.fillRect(Math.round(g.x(cursor)) - 1, 0, 2, g.axisY);
  }
  return stats;
}

function drawLanes(ctx: CanvasRenderingContext2D, index: StreamIndex, g: Geometry): void {
  ctx.textAlign = "left";
  for (let row = 0; row < index.rows.length; row++) {
    const r = index.rows[row]!;
    const y = g.y(row);
    ctx.fillStyle = r.workerIndex % 2 === 0 ? "#f7f7f9" : "#eef0f4";
    ctx.fillRect(0, y, g.width, g.rowHeight);
    if (r.lane === 0) {
      ctx.fillStyle = "#c9ccd3";
      ctx.fillRect(0, y, g.width, 1);
    }
    if (g.rowHeight >= 9 || r.lane === 0) {
      ctx.fillStyle = "#333";
      const label = r.lane === 0 ? r.worker : `${r.lane}`;
      const text = r.lane === 0 ? fit(ctx, label, LABEL_WIDTH - 24) : label;
      ctx.font = r.lane === 0 ? `bold ${FONT}` : FONT;
      ctx.fillText(text, r.lane === 0 ? 4 : LABEL_WIDTH - 18, y + g.rowHeight / 2 + 0.5);
      if (r.lane === 0 && g.rowHeight >= 9) ctx.fillText("0", LABEL_WIDTH - 18, y + g.rowHeight / 2 + 0.5);
      ctx.font = FONT;
    }
  }
}

function fit(ctx: CanvasRenderingContext2D, text: string, width: number): string {
  if (ctx.measureText(text).width <= width) return text;
  let cut = text.length;
  while (cut > 1 && ctx.measureText(`${text.slice(0, cut)}…`).width > width) cut--;
  return `${text.slice(0, cut)}…`;
}

function drawRow(ctx: CanvasRenderingContext2D, index: StreamIndex, g: Geometry, row: number, stats: DrawStats): void {
  const list = index.lane(row);
  if (list === undefined) return;
  const y = g.y(row) + 1;
  const h = Math.max(g.rowHeight - 2, 1);
  // The run of pixels being merged: [x0, x1) in one colour.
  let colour = "";
  let x0 = 0;
  let x1 = -Infinity;
  const flush = () => {
    if (x1 > x0) {
      ctx.fillStyle = colour;
      ctx.fillRect(x0, y, x1 - x0, h);
      stats.rects++;
    }
  };
  let i = index.firstEndingAfter(list, g.t0);
  while (i < list.length) {
    const bar = index.bars[list[i]!]!;
    if (bar.start > g.t1) break;
    const c = bar.outcome === "erred" ? FAILURE_COLOUR : prefixColour(bar.prefix);
    let left = g.x(bar.start);
    let right = g.x(bar.end);
    // A gap of a pixel or more between bars stays visible when zoomed in enough to show it.
    if (right - left >= 3) {
      left += 0.5;
      right -= 0.5;
    }
    if (right - left < 1) right = left + 1;
    if (c === colour && left <= x1 + 0.5) {
      if (right > x1) x1 = right;
    } else {
      flush();
      colour = c;
      x0 = left;
      x1 = right;
    }
    // Bars that end inside the pixels already filled add nothing: jump past them.
    let next = i + 1;
    const filled = g.t(Math.floor(x1));
    if (filled < g.t1 && next < list.length && index.bars[list[next]!]!.end < filled) next = index.firstEndingAfter(list, filled, next);
    stats.bars += next - i;
    i = next;
  }
  flush();
}

/** What runs now on a live cluster: to the latest time, half-filled. */
function drawRunning(ctx: CanvasRenderingContext2D, index: StreamIndex, g: Geometry): void {
  for (const bar of index.running) {
    const rows = index.rowsOf(bar.worker);
    if (rows === undefined || bar.start > g.t1 || bar.lane >= rows.count) continue;
    const y = g.y(rows.first + bar.lane) + 1;
    const left = g.x(bar.start);
    const width = Math.max(g.x(index.end) - left, 2);
    ctx.globalAlpha = 0.5;
    ctx.fillStyle = prefixColour(bar.prefix);
    ctx.fillRect(left, y, width, Math.max(g.rowHeight - 2, 1));
    ctx.globalAlpha = 1;
  }
}

/** Failures, lost and cancelled work, drawn over the merged pixels so a short one is never hidden. */
function drawMarked(ctx: CanvasRenderingContext2D, index: StreamIndex, g: Geometry, bar: StreamBar): void {
  const rows = index.rowsOf(bar.worker);
  if (rows === undefined) return;
  const y = g.y(rows.first + bar.lane) + 1;
  const h = Math.max(g.rowHeight - 2, 1);
  const left = g.x(bar.start);
  const width = Math.max(g.x(bar.end) - left, 3);
  if (bar.outcome === "erred") {
    ctx.fillStyle = FAILURE_COLOUR;
    ctx.fillRect(left, y, width, h);
    ctx.strokeStyle = "#67000d";
    ctx.lineWidth = 1;
    ctx.strokeRect(left + 0.5, y + 0.5, width - 1, h - 1);
    return;
  }
  // lost or cancelled: faded, crossed out.
  ctx.fillStyle = "rgba(255,255,255,0.6)";
  ctx.fillRect(left, y, width, h);
  ctx.strokeStyle = bar.outcome === "lost" ? "#7a0010" : "#555";
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(left, y);
  ctx.lineTo(left + width, y + h);
  ctx.moveTo(left, y + h);
  ctx.lineTo(left + width, y);
  ctx.stroke();
}

function outline(ctx: CanvasRenderingContext2D, index: StreamIndex, g: Geometry, bar: StreamBar): void {
  const rows = index.rowsOf(bar.worker);
  if (rows === undefined) return;
  const y = g.y(rows.first + bar.lane);
  const left = g.x(bar.start);
  ctx.strokeStyle = "#000";
  ctx.lineWidth = 2;
  ctx.strokeRect(left - 1, y, Math.max(g.x(bar.end) - left, 2) + 2, g.rowHeight);
}

function workerMiddle(index: StreamIndex, g: Geometry, worker: string): number | undefined {
  const rows = index.rowsOf(worker);
  return rows === undefined ? undefined : g.y(rows.first) + (rows.count * g.rowHeight) / 2;
}

function drawTransfers(ctx: CanvasRenderingContext2D, index: StreamIndex, g: Geometry): void {
  ctx.strokeStyle = "rgba(120, 60, 170, 0.6)";
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let i = index.firstTransferFrom(g.t0); i < index.transfers.length; i++) {
    const x = index.transfers[i]!;
    if (x.start > g.t1) break;
    if (x.end < g.t0) continue;
    const from = workerMiddle(index, g, x.from);
    const to = workerMiddle(index, g, x.to);
    if (from === undefined || to === undefined) continue;
    ctx.moveTo(g.x(x.start), from);
    ctx.lineTo(g.x(x.end), to);
  }
  ctx.stroke();
}

function drawSteals(ctx: CanvasRenderingContext2D, index: StreamIndex, g: Geometry): void {
  for (const s of index.steals) {
    if (s.t < g.t0 || s.t > g.t1) continue;
    const from = workerMiddle(index, g, s.victim);
    const to = workerMiddle(index, g, s.thief);
    if (from === undefined || to === undefined) continue;
    const confirmed = s.outcome === "confirmed";
    const x = g.x(s.t);
    ctx.strokeStyle = ctx.fillStyle = confirmed ? "#e6550d" : "#888";
    ctx.lineWidth = confirmed ? 2 : 1;
    ctx.setLineDash(confirmed ? [] : [4, 3]);
    ctx.beginPath();
    ctx.moveTo(x, from);
    ctx.lineTo(x, to);
    ctx.stroke();
    ctx.setLineDash([]);
    const dir = to > from ? 1 : -1;
    ctx.beginPath();
    ctx.moveTo(x, to);
    ctx.lineTo(x - 4, to - 7 * dir);
    ctx.lineTo(x + 4, to - 7 * dir);
    ctx.closePath();
    ctx.fill();
  }
}

function drawDeaths(ctx: CanvasRenderingContext2D, index: StreamIndex, g: Geometry): void {
  drawAbsences(ctx, index, g);
  for (const death of index.deaths) {
    const rows = index.rowsOf(death.worker);
    if (rows === undefined || death.t > g.t1) continue;
    const top = g.y(rows.first);
    const height = rows.count * g.rowHeight;
    const x = Math.max(g.x(death.t), LABEL_WIDTH);
    // Shaded from the death until the worker came back (its left time is cleared by a new start) or the end.
    const worker = index.workers.find((w) => w.name === death.worker);
    const until = worker?.died && worker.left === death.t ? g.t1 : death.t;
    ctx.fillStyle = "rgba(60, 0, 0, 0.12)";
    ctx.fillRect(x, top, g.x(until) - x, height);
    if (death.t < g.t0) continue;
    ctx.fillStyle = "#7a0010";
    ctx.fillRect(Math.round(x) - 1, top, 3, height);
    ctx.textAlign = "left";
    ctx.fillText(`✕ ${death.why ?? "died"}`, x + 4, top + Math.min(height, 14) / 2);
  }
}

/** Before a worker joined, its lanes are shaded: it could run nothing there. */
function drawAbsences(ctx: CanvasRenderingContext2D, index: StreamIndex, g: Geometry): void {
  ctx.fillStyle = "rgba(0, 0, 0, 0.06)";
  for (const worker of index.workers) {
    const rows = index.rowsOf(worker.name);
    if (rows === undefined || worker.joined <= g.t0) continue;
    ctx.fillRect(LABEL_WIDTH, g.y(rows.first), Math.min(g.x(worker.joined), g.x(g.t1)) - LABEL_WIDTH, rows.count * g.rowHeight);
  }
}

function drawAxis(ctx: CanvasRenderingContext2D, g: Geometry): void {
  const y = g.axisY;
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, y, g.width, AXIS_HEIGHT);
  ctx.fillStyle = "#555";
  ctx.fillRect(LABEL_WIDTH, y, g.plotWidth, 1);
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  const { times, digits } = g.ticks();
  for (const t of times) {
    const x = Math.round(g.x(t));
    ctx.fillRect(x, y, 1, 4);
    ctx.fillText(`${t.toFixed(digits)}s`, x, y + 6);
  }
  ctx.textAlign = "left";
  ctx.fillText("s from start", 4, y + 6);
  ctx.textBaseline = "middle";
}
