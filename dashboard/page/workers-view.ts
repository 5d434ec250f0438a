/** The workers table: state, occupancy, executing, memory held, tasks done, steals in and out. */
import { bytes, el, seconds, type WorkerRow } from "./api.js";

const HEADINGS = ["worker", "state", "threads", "executing", "occupancy", "in memory", "done", "steals in", "steals out"];

export function mountWorkers(parent: HTMLElement, opts: { onKey?(key: string): void } = {}): { set(rows: WorkerRow[]): void } {
  const root = el("div", "workers");
  root.append(el("h2", undefined, "Workers"));
  const table = el("table");
  const head = el("tr");
  for (const h of HEADINGS) head.append(el("th", undefined, h));
  table.append(el("thead"), el("tbody"));
  table.tHead!.append(head);
  root.append(table);
  parent.append(root);
  return {
    set(rows) {
      table.tBodies[0]!.replaceChildren(
        ...rows.map((w) => {
          const tr = el("tr", `worker ${w.status}`);
          tr.dataset.worker = w.name;
          tr.dataset.status = w.status;
          tr.dataset.done = String(w.done);
          tr.dataset.executing = String(w.executing.length);
          const state = w.status === "running" ? (w.schedulerState ?? "running") : w.status;
          const executing = el("td", "executing");
          executing.append(String(w.executing.length));
          for (const key of w.executing.slice(0, 3)) {
            const link = el("a", "key", key);
            link.href = "#";
            link.addEventListener("click", (e) => {
              e.preventDefault();
              opts.onKey?.(key);
            });
            executing.append(" ", link);
          }
          tr.append(
            el("td", "name", w.name),
            el("td", "state", w.reason && w.status !== "running" ? `${state} (${w.reason})` : state),
            el("td", "num", w.nthreads === undefined ? "?" : String(w.nthreads)),
            executing,
            el("td", "num", seconds(w.occupancy)),
            el("td", "num", `${w.inMemory} (${bytes(w.bytes)})`),
            el("td", "num", String(w.done)),
            el("td", "num", String(w.stealsIn)),
            el("td", "num", String(w.stealsOut)),
          );
          return tr;
        }),
      );
    },
  };
}
