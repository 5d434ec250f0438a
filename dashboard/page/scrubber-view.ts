/**
 * The time scrubber over a recorded log: a slider over its records and a step back / step
 * forward record by record. Each move asks the server for the whole cluster at that cut.
 */
import { el } from "./api.js";

export function mountScrubber(parent: HTMLElement, records: number, onMove: (index: number) => void): { show(index: number, t: number, cut: string): void } {
  const back = el("button", "step back", "◀");
  back.title = "one record back";
  const forward = el("button", "step forward", "▶");
  forward.title = "one record forward";
  const slider = el("input", "slider");
  slider.type = "range";
  slider.min = "0";
  slider.max = String(records);
  slider.value = String(records);
  const label = el("span", "cut");
  parent.append(el("h2", undefined, "Time"), back, slider, forward, label);
  parent.hidden = false;
  let pending: number | undefined;
  const move = (index: number) => {
    const clamped = Math.max(0, Math.min(records, index));
    slider.value = String(clamped);
    // While the slider is dragged, ask for the latest position only.
    if (pending !== undefined) cancelAnimationFrame(pending);
    pending = requestAnimationFrame(() => {
      pending = undefined;
      onMove(clamped);
    });
  };
  slider.addEventListener("input", () => move(Number(slider.value)));
  back.addEventListener("click", () => move(Number(slider.value) - 1));
  forward.addEventListener("click", () => move(Number(slider.value) + 1));
  return {
    show(index, t, cut) {
      parent.dataset.index = String(index);
      label.textContent = `+${t.toFixed(6)}s, ${cut}`;
    },
  };
}
