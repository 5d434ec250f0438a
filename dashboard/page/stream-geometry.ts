/** Where things go on the task-stream canvas: time to x, row to y, and the time axis's ticks. */

export const LABEL_WIDTH = 120;
export const TOP = 6;
export const AXIS_HEIGHT = 24;
const MAX_PLOT_HEIGHT = 640;

export class Geometry {
  readonly plotWidth: number;
  readonly rowHeight: number;
  readonly height: number;

  constructor(
    readonly width: number,
    readonly rows: number,
    /** The time range in view, seconds from the run's start. */
    readonly t0: number,
    readonly t1: number,
  ) {
    this.plotWidth = Math.max(width - LABEL_WIDTH - 8, 10);
    this.rowHeight = Math.max(3, Math.min(18, Math.floor(MAX_PLOT_HEIGHT / Math.max(rows, 1))));
    this.height = TOP + this.rowHeight * Math.max(rows, 1) + AXIS_HEIGHT;
  }

  x(t: number): number {
    return LABEL_WIDTH + ((t - this.t0) / (this.t1 - this.t0)) * this.plotWidth;
  }

  t(x: number): number {
    return this.t0 + ((x - LABEL_WIDTH) / this.plotWidth) * (this.t1 - this.t0);
  }

  /** Seconds per pixel. */
  get scale(): number {
    return (this.t1 - this.t0) / this.plotWidth;
  }

  y(row: number): number {
    return TOP + row * this.rowHeight;
  }

  /** The row under `y`, or -1. */
  row(y: number): number {
    const row = Math.floor((y - TOP) / this.rowHeight);
    return row >= 0 && row < this.rows ? row : -1;
  }

  get axisY(): number {
    return TOP + this.rowHeight * Math.max(this.rows, 1);
  }

  /** Tick times about every 90 px, at 1, 2 or 5 times a power of ten seconds, and the decimals to print them with. */
  ticks(): { times: number[]; digits: number } {
    const rough = (this.t1 - this.t0) / Math.max(this.plotWidth / 90, 1);
    const power = Math.pow(10, Math.floor(Math.log10(rough)));
    const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
    const times: number[] = [];
    for (let t = Math.ceil(this.t0 / step) * step; t <= this.t1; t += step) times.push(t);
    return { times, digits: Math.max(0, -Math.floor(Math.log10(step))) };
  }
}
