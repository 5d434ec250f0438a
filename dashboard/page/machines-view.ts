/**
 * The machines view: each machine definition drawn as a state diagram (the server reads the
 * graph from the XState definition, GET /api/machines), with the instances in each state and
 * how often each edge was taken; edges never taken are faint. SVG: tens of nodes per machine.
 * Test hooks: the root's data-machines and data-records (read up to the cut), each node's
 * data-machine/data-state/data-count, each edge's data-from/data-to/data-taken.
 */
import type { MachinesView, MachineView } from "../server/machines-wire.js";
import { layoutGraph, routeKey, type Layout } from "./graph-layout.js";

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
  const toggle = document.createElement("label");
  toggle.className = "machines-label-all";
  const labelAll = document.createElement("input");
  labelAll.type = "checkbox";
  toggle.append(labelAll, " name the edges never taken");
  root.append(status, toggle, body);
  parent.appendChild(root);
  labelAll.addEventListener("change", () => {
    if (shown !== undefined) set(shown);
  });
  let request = 0;
  let refreshing = false;
  let again = false;

  let shown: MachinesView | undefined;
  const set = (view: MachinesView): void => {
    shown = view;
    body.replaceChildren(...view.machines.map((m) => drawMachine(m, labelAll.checked)));
    root.dataset.machines = String(view.machines.length);
    root.dataset.records = String(view.records);
    status.textContent = `${view.records} records read, ${view.cut}${view.partial !== undefined ? `; ${view.partial}` : ""}`;
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

function drawMachine(machine: MachineView, labelAll: boolean): HTMLElement {
  const section = document.createElement("section");
  section.className = "machine";
  section.dataset.machine = machine.id;
  const heading = document.createElement("h3");
  heading.textContent = `${machine.id}: ${machine.title}`;
  const note = document.createElement("p");
  note.className = "machine-note";
  const transitions = machine.edges.reduce((n, e) => n + e.taken, 0);
  note.textContent = `${machine.instances} instances, ${transitions} transitions` + (machine.offGraph.length > 0 ? `; not in the definition: ${machine.offGraph.map((e) => `${e.from} -${e.event}-> ${e.to} x${e.taken}`).join(", ")}` : "");
  section.append(heading, note, diagram(machine, labelAll));
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

/** The extent of what is drawn, grown point by point. */
class Bounds {
  minX = Infinity;
  minY = Infinity;
  maxX = -Infinity;
  maxY = -Infinity;
  add(x: number, y: number): void {
    this.minX = Math.min(this.minX, x);
    this.minY = Math.min(this.minY, y);
    this.maxX = Math.max(this.maxX, x);
    this.maxY = Math.max(this.maxY, y);
  }
}

function diagram(machine: MachineView, labelAll: boolean): SVGSVGElement {
  const nodes = machine.states.map((s) => ({ id: s.id, width: Math.ceil(labelOf(s).length * CHAR_WIDTH) + 28, height: NODE_HEIGHT }));
  const initial = machine.states.find((s) => s.initial)?.id;
  const links = linksOf(machine);
  const layout = layoutGraph(nodes, links, { ...(initial !== undefined ? { root: initial } : {}), layerGap: 56, nodeGap: 40, waypointWidth: 26 });
  const el = svg("svg", { class: "machine-diagram", "font-family": "system-ui, sans-serif", "font-size": 12 });
  const defs = svg("defs", {}, el);
  for (const [name, colour] of [["taken", TAKEN], ["never", NEVER]] as const) {
    const marker = svg("marker", { id: `arrow-${machine.id}-${name}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto" }, defs);
    svg("path", { d: "M0,0 L10,5 L0,10 z", fill: colour }, marker);
  }
  const bounds = new Bounds();
  for (const box of layout.boxes.values()) {
    bounds.add(box.x, box.y);
    bounds.add(box.x + box.width, box.y + box.height);
  }
  const most = Math.max(1, ...links.map((l) => l.taken));
  const edgeLayer = svg("g", { class: "edges" }, el);
  // Never-taken edges first, so the taken ones are drawn over them.
  for (const link of [...links].sort((a, b) => Number(a.taken > 0) - Number(b.taken > 0))) drawLink(edgeLayer, link, layout, most, machine.id, labelAll, bounds);
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
  const pad = 12;
  const x = bounds.minX - pad;
  const y = bounds.minY - pad;
  const width = bounds.maxX - bounds.minX + 2 * pad;
  const height = bounds.maxY - bounds.minY + 2 * pad;
  el.setAttribute("viewBox", `${x} ${y} ${width} ${height}`);
  el.setAttribute("width", String(Math.ceil(width)));
  el.setAttribute("height", String(Math.ceil(height)));
  return el;
}

/** A smooth path through `points`, leaving and entering each vertically. */
function pathThrough(points: readonly { x: number; y: number }[]): string {
  let d = `M${points[0]!.x},${points[0]!.y}`;
  for (let k = 1; k < points.length; k++) {
    const a = points[k - 1]!;
    const b = points[k]!;
    const mid = (a.y + b.y) / 2;
    d += ` C${a.x},${mid} ${b.x},${mid} ${b.x},${b.y}`;
  }
  return d;
}

function drawLink(parent: SVGGElement, link: Link, layout: Layout, most: number, machine: string, labelAll: boolean, bounds: Bounds): void {
  let d: string;
  let label: { x: number; y: number };
  if (link.from === link.to) {
    // A loop on the node's right side.
    const a = layout.boxes.get(link.from)!;
    const x = a.x + a.width;
    const y = a.y + a.height / 2;
    d = `M${x},${y - 8} C${x + 36},${y - 28} ${x + 36},${y + 28} ${x},${y + 8}`;
    label = { x: x + 8, y: a.y - 5 };
    bounds.add(x + 36, y);
  } else {
    const points = layout.routes.get(routeKey(link.from, link.to))!;
    d = pathThrough(points);
    for (const p of points) bounds.add(p.x, p.y);
    // On the middle of the route: the middle waypoint, or the middle of a one-layer edge.
    const m = Math.floor((points.length - 1) / 2);
    const a = points[m]!;
    const b = points[m + 1]!;
    label = points.length % 2 === 1 ? { x: a.x + 4, y: a.y + 4 } : { x: (a.x + b.x) / 2 + 4, y: (a.y + b.y) / 2 + 4 };
  }
  const never = link.taken === 0;
  const g = svg("g", { class: `edge${never ? " never" : ""}`, "data-machine": machine, "data-from": link.from, "data-to": link.to, "data-taken": link.taken, "data-events": link.events.map((e) => e.event).join(" ") }, parent);
  const width = never ? 1 : 1.2 + 2.5 * (Math.log1p(link.taken) / Math.log1p(most));
  svg("path", { d, fill: "none", stroke: never ? NEVER : TAKEN, "stroke-width": width.toFixed(2), ...(never ? { "stroke-dasharray": "4 3" } : {}), "marker-end": `url(#arrow-${machine}-${never ? "never" : "taken"})` }, g);
  const title = svg("title", {}, g);
  title.textContent = `${link.from} -> ${link.to}: ${link.events.map((e) => `${e.event} taken ${e.taken} time(s)`).join("; ")}`;
  // Never-taken edges are labelled on demand: their names would crowd out the ones that happened.
  const shown = link.events.filter((e) => e.taken > 0 || labelAll);
  if (shown.length === 0) return;
  const text = svg("text", { x: label.x, y: label.y, class: "edge-label", "font-size": 10, fill: never ? "#8a949e" : TAKEN, stroke: "#fff", "stroke-width": 3, "paint-order": "stroke" }, g);
  text.textContent = shown.map((e) => (e.taken > 0 ? `${e.event} ${e.taken}` : e.event)).join(", ");
  bounds.add(label.x + text.textContent.length * 6, label.y);
}
