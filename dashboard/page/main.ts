/**
 * The dashboard page: header, task stream, progress per prefix, workers, and the story of a
 * key clicked. Over a recorded log, a time scrubber shows the whole cluster at any cut;
 * over a live cluster, server-sent events move everything as records come.
 */
import { decodeTaskStream, type TaskStreamWire } from "../../tools/task-stream.js";
import { el, getJson, type AtAnswer, type ClusterAt, type Summary } from "./api.js";
import { mountMachines } from "./machines-view.js";
import { mountProgress } from "./progress-view.js";
import { mountScrubber } from "./scrubber-view.js";
import { mountStory } from "./story-view.js";
import { mountTaskStream } from "./task-stream-view.js";
import { mountWhatIf } from "./what-if-view.js";
import { mountWorkers } from "./workers-view.js";

const slot = (id: string): HTMLElement => document.getElementById(id)!;

async function main(): Promise<void> {
  const summary = await getJson<Summary>("/api/summary");
  const story = mountStory(slot("story-slot"));
  const openStory = (key: string) => void story.open(key);
  const stream = mountTaskStream(slot("stream-slot"), { title: "Task stream", onBar: openStory });
  // For the browser tests and the console: where a key's bar is drawn (stream.locate).
  (window as unknown as { dashboard: unknown }).dashboard = { stream };
  const progress = mountProgress(slot("progress-slot"));
  const workers = mountWorkers(slot("workers-slot"), { onKey: openStory });
  mountKeyBox(slot("header"), openStory);
  const machines = mountMachines(slot("machines-slot"));
  mountWhatIf(slot("what-if-slot"), { mountTaskStream });
  slot("machines-slot").hidden = slot("what-if-slot").hidden = false;

  const show = (view: ClusterAt) => {
    progress.set(view.progress);
    workers.set(view.workers);
  };
  showHeader(summary);
  show(summary.now);
  document.body.dataset.records = String(summary.records);

  if (summary.source.live) {
    // Subscribe before reading the stream, so no bar completed in between is missed.
    const events = new EventSource("/api/events");
    await new Promise<void>((resolve) => events.addEventListener("hello", () => resolve(), { once: true }));
    stream.set(decodeTaskStream(await getJson<TaskStreamWire>("/api/stream")));
    events.addEventListener("update", (message) => {
      const update = JSON.parse((message as MessageEvent<string>).data) as { summary: Summary; stream: TaskStreamWire };
      showHeader(update.summary);
      show(update.summary.now);
      stream.append(decodeTaskStream(update.stream));
      machines.refresh();
      document.body.dataset.records = String(update.summary.records);
    });
  } else {
    stream.set(decodeTaskStream(await getJson<TaskStreamWire>("/api/stream")));
    const scrubber = mountScrubber(slot("scrubber-slot"), summary.records, (index) => {
      void getJson<AtAnswer>(`/api/at?index=${index}`).then((at) => {
        show(at);
        scrubber.show(at.index, at.t, at.cut);
        stream.setCursor(at.index >= summary.records ? null : at.t);
        void machines.load(at.index >= summary.records ? null : { index: at.index });
      });
    });
    scrubber.show(summary.records, summary.end, "the end of the log");
  }
  // After the task stream, which a person looks at first.
  await machines.load();
  document.body.dataset.ready = "true";
}

function showHeader(summary: Summary): void {
  const source = summary.source;
  slot("source").textContent = source.kind === "log" ? `log ${source.location}` : `cluster ${source.cluster ?? source.location} (${source.kind === "embedded" ? "embedded" : "NATS"})`;
  const started = summary.startIso ? `started ${summary.startIso.replace("T", " ").replace(/\.\d+Z$/, " UTC")}, ` : "";
  slot("run-time").textContent = `${started}${summary.end.toFixed(3)} s, ${summary.records} records`;
  slot("live").hidden = !source.live;
}

/** A key box in the header: type a key (or its start) to open its story. */
function mountKeyBox(parent: HTMLElement, open: (key: string) => void): void {
  const form = el("form", "key-box");
  const input = el("input");
  input.name = "key";
  input.placeholder = "task key: story";
  form.append(input);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (input.value.trim()) open(input.value.trim());
  });
  parent.append(form);
}

main().catch((error: unknown) => {
  document.body.dataset.error = String((error as Error)?.message ?? error);
  document.body.prepend(el("p", "fatal", `the dashboard could not load: ${(error as Error)?.message ?? error}`));
  throw error;
});
