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
import { mountTaskStream, type TaskStreamView } from "./task-stream-view.js";
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
    rendered(summary);
    events.addEventListener("update", (message) => {
      const update = JSON.parse((message as MessageEvent<string>).data) as { summary: Summary; stream: TaskStreamWire };
      showHeader(update.summary);
      show(update.summary.now);
      stream.append(decodeTaskStream(update.stream));
      machines.refresh();
      document.body.dataset.records = String(update.summary.records);
    });
  } else {
    const whole = await recorded(summary, stream, show);
    const scrubber = mountScrubber(slot("scrubber-slot"), whole.records, (index) => {
      void getJson<AtAnswer>(`/api/at?index=${index}`).then((at) => {
        show(at);
        scrubber.show(at.index, at.t, at.cut);
        stream.setCursor(at.index >= whole.records ? null : at.t);
        void machines.load(at.index >= whole.records ? null : { index: at.index });
      });
    });
    scrubber.show(whole.records, whole.end, "the end of the log");
    await whole.loaded;
  }
  // After the task stream, which a person looks at first.
  await machines.load();
  document.body.dataset.ready = "true";
}

/**
 * A recorded log: its whole task stream drawn, then `data-rendered` (the first full render).
 * While the server still reads the log (summary.loading), its whole stream is drawn as soon
 * as the server has it (streamReady: from the cache at once, or after its first pass over
 * the log), and until then the stream as it grows with the reading's progress. Answers the
 * whole log's summary (records and end) for the scrubber, and when the server has read it
 * all (the views that need every record wait for that).
 */
async function recorded(summary: Summary, stream: TaskStreamView, show: (view: ClusterAt) => void): Promise<{ records: number; end: number; loaded: Promise<void> }> {
  const loading = summary.loading;
  if (loading === undefined) {
    stream.set(decodeTaskStream(await getJson<TaskStreamWire>("/api/stream")));
    rendered(summary);
    return { records: summary.records, end: summary.end, loaded: Promise.resolve() };
  }
  const events = new EventSource("/api/events");
  const hello = await new Promise<{ loading: boolean }>((resolve) => events.addEventListener("hello", (m) => resolve(JSON.parse((m as MessageEvent<string>).data)), { once: true }));
  let whole = loading.streamReady;
  let streamWhole: (summary: Summary) => void = () => {};
  // The whole log's summary once the server has the whole stream (at once with the cache).
  const ready = loading.streamReady ? Promise.resolve(summary) : new Promise<Summary>((resolve) => (streamWhole = resolve));
  const read = new Promise<Summary>((resolve) => {
    if (!hello.loading) {
      events.close();
      void getJson<Summary>("/api/summary").then((last) => (streamWhole(last), resolve(last)));
      return;
    }
    events.addEventListener("update", (message) => {
      const update = JSON.parse((message as MessageEvent<string>).data) as { summary: Summary; stream?: TaskStreamWire };
      if (update.summary.loading === undefined) {
        events.close();
        streamWhole(update.summary);
        resolve(update.summary);
        return;
      }
      if (whole) {
        showHeader(update.summary);
        return;
      }
      if (update.summary.loading.streamReady) {
        whole = true;
        streamWhole(update.summary);
        return;
      }
      showHeader(update.summary);
      show(update.summary.now);
      if (update.stream !== undefined) stream.append(decodeTaskStream(update.stream));
    });
  });
  // Drawn now: the whole log's (from the cache) or what has been read.
  stream.set(decodeTaskStream(await getJson<TaskStreamWire>("/api/stream")));
  if (loading.streamReady) {
    rendered(summary);
    return { records: summary.records, end: summary.end, loaded: read.then(showHeader) };
  }
  const first = await ready;
  showHeader(first);
  show(first.now);
  stream.set(decodeTaskStream(await getJson<TaskStreamWire>("/api/stream")));
  rendered(first);
  return { records: first.records, end: first.end, loaded: read.then(showHeader) };
}

/** The whole log's task stream and summary are shown: the browser tests and the open bench wait for this. */
function rendered(summary: Summary): void {
  document.body.dataset.records = String(summary.records);
  // After the next frame: the task stream has drawn.
  requestAnimationFrame(() => (document.body.dataset.rendered = "true"));
}

function showHeader(summary: Summary): void {
  const source = summary.source;
  slot("source").textContent = source.kind === "log" ? `log ${source.location}` : `cluster ${source.cluster ?? source.location} (${source.kind === "embedded" ? "embedded" : "NATS"})`;
  const started = summary.startIso ? `started ${summary.startIso.replace("T", " ").replace(/\.\d+Z$/, " UTC")}, ` : "";
  const loading = summary.loading;
  const reading = loading === undefined ? "" : `; reading the log: ${loading.read.toLocaleString("en")}${loading.of !== undefined ? ` of ${loading.of.toLocaleString("en")}` : ""} records`;
  slot("run-time").textContent = `${started}${summary.end.toFixed(3)} s, ${summary.records} records${reading}`;
  if (loading === undefined) delete document.body.dataset.loading;
  else document.body.dataset.loading = String(loading.read);
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
