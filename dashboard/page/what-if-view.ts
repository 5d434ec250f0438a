/**
 * The what-if view: a few settings, a run button, and the recorded and simulated task
 * streams one above the other (POST /api/what-if), with their makespans and the ratio.
 * It draws the streams with the task-stream widget it is given (task-stream-view.ts).
 * Test hooks on the root: data-state (idle, running, done, error) and, once done,
 * data-recorded-makespan, data-simulated-makespan, data-ratio.
 */
import { decodeTaskStream } from "../../tools/task-stream-wire.js";
import type { TaskStream } from "../../tools/task-stream-types.js";
import type { WhatIfAnswer, WhatIfRequest } from "../server/what-if-wire.js";

interface TimeSpan {
  t0: number;
  t1: number;
}

/** What this view needs of the task-stream widget (task-stream-view.ts's mountTaskStream fits it). */
export type MountTaskStream = (
  parent: HTMLElement,
  opts: { title?: string; onView?(span: TimeSpan): void },
) => { set(stream: TaskStream): void; view(): TimeSpan; setView(span: TimeSpan | null): void; destroy(): void };

export interface WhatIfOptions {
  mountTaskStream: MountTaskStream;
  /** Where the what-if runs; default "/api/what-if". */
  url?: string;
}

export interface WhatIfHandle {
  /** Runs the what-if with `request` (default: the form's settings) and shows it. */
  run(request?: WhatIfRequest): Promise<void>;
  destroy(): void;
}

function field(form: HTMLElement, label: string, input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint: string): void {
  const row = document.createElement("label");
  row.className = "what-if-field";
  row.style.display = "inline-flex";
  row.style.alignItems = "center";
  row.style.gap = "6px";
  const name = document.createElement("span");
  name.textContent = label;
  input.title = hint;
  row.append(name, input);
  form.appendChild(row);
}

function textInput(name: string, placeholder: string): HTMLInputElement {
  const input = document.createElement("input");
  input.name = name;
  input.placeholder = placeholder;
  input.size = 10;
  return input;
}

const seconds = (s: number): string => (Number.isFinite(s) ? `${s.toFixed(3)} s` : String(s));

/** The form's fields as a request: blank fields are left as recorded. */
function requestOf(form: HTMLFormElement): WhatIfRequest {
  const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value.trim();
  const set: Record<string, unknown> = {};
  const stealing = value("workStealing");
  if (stealing !== "") set.workStealing = stealing === "on";
  if (value("workerSaturation") !== "") set.workerSaturation = value("workerSaturation");
  if (value("bandwidth") !== "") set.bandwidth = value("bandwidth");
  // More settings, one key=value a line, read as `natsched what-if --set` reads them.
  for (const line of value("more").split("\n")) {
    const eq = line.indexOf("=");
    if (line.trim() === "") continue;
    if (eq <= 0) throw new Error(`other settings: expected key=value, got "${line.trim()}"`);
    set[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  const request: WhatIfRequest = { set };
  const threads = value("threads");
  if (threads !== "") request.threads = Number(threads);
  return request;
}

export function mountWhatIf(parent: HTMLElement, options: WhatIfOptions): WhatIfHandle {
  const url = options.url ?? "/api/what-if";
  const root = document.createElement("div");
  root.className = "what-if-view";
  root.dataset.state = "idle";

  const form = document.createElement("form");
  form.className = "what-if-form";
  // Laid out here, so the form reads the same whatever stylesheet the page has.
  Object.assign(form.style, { display: "flex", flexWrap: "wrap", alignItems: "center", gap: "8px 18px" });
  const stealing = document.createElement("select");
  stealing.name = "workStealing";
  for (const [v, text] of [["", "as recorded"], ["on", "on"], ["off", "off"]]) stealing.add(new Option(text, v));
  field(form, "work stealing", stealing, "workStealing");
  field(form, "worker saturation", textInput("workerSaturation", "as recorded"), 'workerSaturation: a number > 0, or "inf" (no queuing)');
  const threads = textInput("threads", "as recorded");
  threads.type = "number";
  threads.min = "1";
  field(form, "threads per worker", threads, "every worker's executor threads");
  field(form, "bandwidth", textInput("bandwidth", "as recorded"), 'bytes/s between workers, e.g. "1GB"');
  const more = document.createElement("textarea");
  more.name = "more";
  more.rows = 2;
  more.placeholder = "key=value per line";
  field(form, "other settings", more, "any config setting, as natsched what-if --set takes it");
  const button = document.createElement("button");
  button.type = "submit";
  button.textContent = "Run what-if";
  form.appendChild(button);

  const summary = document.createElement("p");
  summary.className = "what-if-summary";
  const error = document.createElement("p");
  error.className = "what-if-error";
  error.setAttribute("role", "alert");
  const recordedBox = document.createElement("div");
  recordedBox.className = "what-if-recorded";
  const simulatedBox = document.createElement("div");
  simulatedBox.className = "what-if-simulated";
  root.append(form, error, summary, recordedBox, simulatedBox);
  parent.appendChild(root);

  // One zoom for both: they share a time axis (the simulation is placed at the recorded run's
  // first graph), so a pan or zoom of either moves the other, and bar widths compare.
  const recorded = options.mountTaskStream(recordedBox, { title: "recorded", onView: (span) => simulated.setView(span) });
  const simulated = options.mountTaskStream(simulatedBox, { title: "simulated", onView: (span) => recorded.setView(span) });
  let request = 0;

  const run = async (given?: WhatIfRequest): Promise<void> => {
    const mine = ++request;
    root.dataset.state = "running";
    button.disabled = true;
    error.textContent = "";
    try {
      const body = given ?? requestOf(form);
      const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const json = (await res.json()) as WhatIfAnswer | { error: string; code: string };
      if (mine !== request) return;
      if ("error" in json) {
        error.textContent = json.error;
        root.dataset.state = "error";
        return;
      }
      recorded.set(decodeTaskStream(json.recorded.stream));
      simulated.set(decodeTaskStream(json.simulated.stream));
      // Each starts on its whole run: both show the longer one's.
      const a = recorded.view();
      const b = simulated.view();
      const both = { t0: Math.min(a.t0, b.t0), t1: Math.max(a.t1, b.t1) };
      recorded.setView(both);
      simulated.setView(both);
      const ratio = Number(json.ratio);
      summary.textContent =
        `recorded makespan ${seconds(json.recorded.makespan)}, simulated ${seconds(json.simulated.makespan)}, ratio ${Number.isFinite(ratio) ? ratio.toFixed(2) : "n/a"}` +
        ` (nothing changed, the simulator gives ${seconds(json.asRecorded.makespan)}; makespans from the first graph at +${json.origin.toFixed(3)} s)` +
        (json.simulated.unfinished > 0 ? `; ${json.simulated.unfinished} task(s) did not finish in the simulation` : "") +
        (json.notes.length > 0 ? `. Notes: ${json.notes.join("; ")}` : "");
      root.dataset.recordedMakespan = String(json.recorded.makespan);
      root.dataset.simulatedMakespan = String(json.simulated.makespan);
      root.dataset.ratio = String(json.ratio);
      root.dataset.state = "done";
    } catch (e) {
      if (mine !== request) return;
      error.textContent = `what-if failed: ${(e as Error).message}`;
      root.dataset.state = "error";
    } finally {
      if (mine === request) button.disabled = false;
    }
  };

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void run();
  });

  return {
    run,
    destroy() {
      request++;
      recorded.destroy();
      simulated.destroy();
      root.remove();
    },
  };
}
