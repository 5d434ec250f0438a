/**
 * Progress per task prefix, as Dask's progress bars: one stacked bar per prefix, done
 * (computed, then released) and in memory, processing, queued, waiting; erred in red.
 */
import { el, type ProgressRow } from "./api.js";

const PARTS = ["released", "memory", "processing", "queued", "waiting", "erred"] as const;

export function mountProgress(parent: HTMLElement, opts: { onPrefix?(prefix: string): void } = {}): { set(rows: ProgressRow[]): void } {
  const root = el("div", "progress");
  root.append(el("h2", undefined, "Progress"));
  const list = el("div", "progress-rows");
  root.append(list);
  const legend = el("div", "legend");
  for (const part of PARTS) legend.append(el("span", `swatch ${part}`, part));
  root.append(legend);
  parent.append(root);
  return {
    set(rows) {
      list.replaceChildren(
        ...rows.map((row) => {
          const line = el("div", "progress-row");
          line.dataset.prefix = row.prefix;
          for (const part of PARTS) line.dataset[part] = String(row[part]);
          line.dataset.total = String(row.total);
          const name = el("span", "prefix", row.prefix);
          if (opts.onPrefix) name.addEventListener("click", () => opts.onPrefix!(row.prefix));
          const bar = el("span", "bar");
          for (const part of PARTS) {
            if (row[part] === 0) continue;
            const piece = el("span", `piece ${part}`);
            piece.style.width = `${(100 * row[part]) / Math.max(1, row.total)}%`;
            piece.title = `${part}: ${row[part]}`;
            bar.append(piece);
          }
          const counts = el("span", "counts", `${row.released + row.memory} / ${row.total}${row.erred ? `, ${row.erred} erred` : ""}`);
          line.append(name, bar, counts);
          return line;
        }),
      );
    },
  };
}
