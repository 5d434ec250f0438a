/**
 * The machines view: each machine definition drawn as a state diagram (the server reads the
 * graph from the XState definition, GET /api/machines), with the instances in each state and
 * how often each edge was taken; edges never taken are faint. SVG: tens of nodes per machine.
 * Test hooks: the root's data-machines and data-records (read up to the cut), each node's
 * data-machine/data-state/data-count, each edge's data-from/data-to/data-taken.
 */
import type { MachinesView, MachineView } from "../server/machines-wire.js";
import { layoutGraph, type LayoutBox } from "./graph-layout.js";

export interface MachinesOptions {
  /** Where the view is served; default "/api/machines". */
  url?: string;
}

/** A cut of the log, as GET /api/at takes it: records in log order, a scheduler record number, or seconds from the run's start. */
export type MachinesCut = { index: number } | { seq: number } | { t: number } | null;

export interface MachinesHandle {
  /** Fetches the view at `cut` (null: the whole log) and draws it. */
  load(cut?: MachinesCut): Promise<void>;
  /** Loads the whole log again, at most one load at a time (a live cluster's updates call it often). */
  refresh(): void;
  set(view: MachinesView): void;
  destroy(): void;
}

const SVG = "http://www.w3.org/2000/svg";
const NODE_HEIGHT = 38;
const CHAR_WIDTH = 7.2;
// Colours inline, so the diagram reads the same whatever stylesheet the page has.
const TAKEN = "#3a4a5c";
const NEVER = "#b8c0c8";
const OCCUPIED = "#dcebfa";
const EMPTY = "#f6f7f8";

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, parent?: Element): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  parent?.appendChild(el);
  return el;
}

export function mountMachines(parent: HTMLElement, options: MachinesOptions = {}): MachinesHandle {
  const url = options.url ?? "/api/machines";
  const root = document.createElement("div");
  root.className = "machines-view";
  const status = document.createElement("p");
  status.className = "machines-status";
  const body = document.createElement("div");
  root.append(status, body);
  parent.appendChild(root);
  let request = 0;
  let refreshing = false;
  let again = false;

  const set = (view: MachinesView): void => {
    body.replaceChildren(...view.machines.map(drawMachine));
    root.dataset.machines = String(view.machines.length);
    root.dataset.records = String(view.records);
    status.textContent = `${view.records} records read, ${view.cut}`;
  };

  const load = async (cut: MachinesCut = null): Promise<void> => {
    const mine = ++request;
    const query = cut === null ? "" : "index" in cut ? `?index=${cut.index}` : "seq" in cut ? `?seq=${cut.seq}` : `?t=${cut.t}`;
    const res = await fetch(url + query);
    const json = (await res.json()) as MachinesView | { error: string };
    // A later load may have answered first: only the newest one draws.
    if (mine !== request) return;
    if ("error" in json) status.textContent = json.error;
    else set(json);
  };

  const refresh = (): void => {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    void load()
      .catch((error: unknown) => {
        status.textContent = `machines: ${(error as Error).message}`;
      })
      .finally(() => {
        refreshing = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  };

  return {
    set,
    load,
    refresh,
    destroy() {
      request++;
      root.remove();
    },
  };
}

function drawMachine(machine: MachineView): HTMLElement {
  const section = document.createElement("section");
  section.className = "machine";
  section.dataset.machine = machine.id;
  const heading = document.createElement("h3");
  heading.textContent = `${machine.id}: ${machine.title}`;
  const note = document.createElement("p");
  note.className = "machine-note";
  const transitions = machine.edges.reduce((n, e) => n + e.taken, 0);
  note.textContent = `${machine.instances} instances, ${transitions} transitions` + (machine.offGraph.length > 0 ? `; not in the definition: ${machine.offGraph.map((e) => `${e.from} -${e.event}-> ${e.to} x${e.taken}`).join(", ")}` : "");
  section.append(heading, note, diagram(machine));
  return section;
}

/** One drawn line per (from, to): its events and their counts as the label. */
interface Link {
  from: string;
  to: string;
  events: { event: string; taken: number }[];
  taken: number;
}

function linksOf(machine: MachineView): Link[] {
  const links = new Map<string, Link>();
  for (const e of machine.edges) {
    const key = `${e.from}\n${e.to}`;
    let link = links.get(key);
    if (link === undefined) links.set(key, (link = { from: e.from, to: e.to, events: [], taken: 0 }));
    link.events.push({ event: e.event, taken: e.taken });
    link.taken += e.taken;
  }
  return [...links.values()];
}

function labelOf(state: { id: string; count: number }): string {
  return `${state.id}  ${state.count}`;
}

function diagram(machine: MachineView): SVGSVGElement {
  const nodes = machine.states.map((s) => ({ id: s.id, width: Math.ceil(labelOf(s).length * CHAR_WIDTH) + 28, height: NODE_HEIGHT }));
  const initial = machine.states.find((s) => s.initial)?.id;
  const links = linksOf(machine);
  const layout = layoutGraph(nodes, links, { ...(initial !== undefined ? { root: initial } : {}), layerGap: 64, nodeGap: 36 });
  const margin = { x: 150, y: 30 };
  const width = layout.width + 2 * margin.x;
  const height = layout.height + 2 * margin.y;
  const el = svg("svg", { width, height, viewBox: `${-margin.x} ${-margin.y} ${width} ${height}`, class: "machine-diagram", "font-family": "system-ui, sans-serif", "font-size": 12 });
  const defs = svg("defs", {}, el);
  for (const [name, colour] of [["taken", TAKEN], ["never", NEVER]] as const) {
    const marker = svg("marker", { id: `arrow-${machine.id}-${name}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" }, defs);
    svg("path", { d: "M0,0 L10,5 L0,10 z", fill: colour }, marker);
  }
  const most = Math.max(1, ...links.map((l) => l.taken));
  const edgeLayer = svg("g", { class: "edges" }, el);
  for (const link of links) drawLink(edgeLayer, link, layout.boxes, most, machine.id);
  const nodeLayer = svg("g", { class: "nodes" }, el);
  for (const state of machine.states) {
    const box = layout.boxes.get(state.id)!;
    const g = svg("g", { class: `state${state.count > 0 ? " occupied" : ""}`, "data-machine": machine.id, "data-state": state.id, "data-count": state.count }, nodeLayer);
    svg("rect", { x: box.x, y: box.y, width: box.width, height: box.height, rx: state.final ? 4 : 14, fill: state.count > 0 ? OCCUPIED : EMPTY, stroke: TAKEN, "stroke-width": state.initial ? 2.5 : 1.2 }, g);
    const text = svg("text", { x: box.x + box.width / 2, y: box.y + box.height / 2 + 4, "text-anchor": "middle" }, g);
    const name = svg("tspan", {}, text);
    name.textContent = state.id;
    const count = svg("tspan", { class: "count", dx: 8, "font-weight": "bold" }, text);
    count.textContent = String(state.count);
    const title = svg("title", {}, g);
    title.textContent = `${state.id}: ${state.count} instance(s)${state.initial ? " (initial)" : ""}${state.final ? " (final)" : ""}`;
  }
  return el;
}

function drawLink(parent: SVGGElement, link: Link, boxes: Map<string, LayoutBox>, most: number, machine: string): void {
  const a = boxes.get(link.from)!;
  const b = boxes.get(link.to)!;
  let d: string;
  let label: { x: number; y: number; anchor: string };
  if (link.from === link.to) {
    // A loop on the node's right side.
    const x = a.x + a.width;
    const y = a.y + a.height / 2;
    d = `M${x},${y - 8} C${x + 40},${y - 30} ${x + 40},${y + 30} ${x},${y + 8}`;
    label = { x: x + 34, y: y + 4, anchor: "start" };
  } else if (b.layer > a.layer) {
    const x1 = a.x + a.width / 2;
    const y1 = a.y + a.height;
    const x2 = b.x + b.width / 2;
    const y2 = b.y;
    const bend = (y2 - y1) / 2;
    d = `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}`;
    label = { x: (x1 + x2) / 2 + 4, y: (y1 + y2) / 2, anchor: "start" };
  } else {
    // Up or across: out of the side facing away from the middle, round, and back in.
    const left = a.x + a.width / 2 < b.x + b.width / 2 ? false : true;
    const x1 = left ? a.x : a.x + a.width;
    const x2 = left ? b.x : b.x + b.width;
    const y1 = a.y + a.height / 2 - 6;
    const y2 = b.y + b.height / 2 + 6;
    const reach = 40 + 24 * Math.abs(a.layer - b.layer);
    const cx = left ? Math.min(x1, x2) - reach : Math.max(x1, x2) + reach;
    d = `M${x1},${y1} C${cx},${y1} ${cx},${y2} ${x2},${y2}`;
    label = { x: cx + (left ? -4 : 4) - (left ? 0 : 30), y: (y1 + y2) / 2, anchor: left ? "end" : "start" };
  }
  const g = svg("g", { class: `edge${link.taken === 0 ? " never" : ""}`, "data-machine": machine, "data-from": link.from, "data-to": link.to, "data-taken": link.taken, "data-events": link.events.map((e) => e.event).join(" ") }, parent);
  const width = link.taken === 0 ? 1 : 1.2 + 3 * (Math.log1p(link.taken) / Math.log1p(most));
  const never = link.taken === 0;
  svg("path", { d, fill: "none", stroke: never ? NEVER : TAKEN, "stroke-width": width.toFixed(2), ...(never ? { "stroke-dasharray": "4 3" } : {}), "marker-end": `url(#arrow-${machine}-${never ? "never" : "taken"})` }, g);
  const text = svg("text", { x: label.x, y: label.y, "text-anchor": label.anchor, class: "edge-label", "font-size": 10, fill: never ? NEVER : TAKEN }, g);
  text.textContent = link.events.map((e) => (e.taken > 0 ? `${e.event} ${e.taken}` : e.event)).join(", ");
  const title = svg("title", {}, g);
  title.textContent = `${link.from} -> ${link.to}: ${link.events.map((e) => `${e.event} taken ${e.taken} time(s)`).join("; ")}`;
}
