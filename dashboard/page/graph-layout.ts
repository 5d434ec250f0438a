/**
 * A layered layout for a small directed graph (a machine's states, tens of nodes): cycles
 * broken by a depth-first search from the root (a back edge is laid out turned round), layers
 * by the longest path from a source, an edge spanning layers given a waypoint in each layer
 * between (so it passes between nodes, not through them), the order in each layer by
 * barycentres (a few sweeps down and up), then nodes side by side in their layer, each layer
 * centred. Edges leave a node's bottom (or top) at ports spread along it. No DOM: sizes in,
 * boxes and routes out.
 */

export interface LayoutInputNode {
  id: string;
  width: number;
  height: number;
}

export interface LayoutBox {
  id: string;
  /** Top-left corner. */
  x: number;
  y: number;
  width: number;
  height: number;
  layer: number;
}

export interface Point {
  x: number;
  y: number;
}

export interface Layout {
  boxes: Map<string, LayoutBox>;
  /**
   * Per edge (by `routeKey(from, to)`, self-loops left out): the points it passes, from the
   * source's side to the target's, one in each layer it crosses.
   */
  routes: Map<string, Point[]>;
  width: number;
  height: number;
}

export interface LayoutOptions {
  /** The node the search for cycles starts from (the machine's initial state). */
  root?: string;
  layerGap?: number;
  nodeGap?: number;
  /** Room an edge's waypoint takes in a layer. */
  waypointWidth?: number;
  /** Barycentre sweeps (each one down and one up). */
  sweeps?: number;
}

export const routeKey = (from: string, to: string): string => `${from}\n${to}`;

interface Slot {
  id: string;
  width: number;
  height: number;
  layer: number;
  /** A waypoint of an edge (not a node). */
  waypoint: boolean;
}

/** An edge as laid out: downward from `top` to `bottom` through `waypoints`, `up` when it really runs the other way. */
interface LaidEdge {
  from: string;
  to: string;
  top: string;
  bottom: string;
  up: boolean;
  waypoints: string[];
}

export function layoutGraph(nodes: readonly LayoutInputNode[], edges: readonly { from: string; to: string }[], options: LayoutOptions = {}): Layout {
  const { layerGap = 70, nodeGap = 28, waypointWidth = 14, sweeps = 4 } = options;
  const ids = nodes.map((n) => n.id);
  const known = new Set(ids);
  for (const e of edges) {
    if (!known.has(e.from) || !known.has(e.to)) throw new Error(`edge ${e.from} -> ${e.to} names a node the graph does not have`);
  }
  const links = uniqueLinks(edges);
  const reversed = backEdges(ids, links, options.root);
  const downward = links.map((e) => (reversed.has(routeKey(e.from, e.to)) ? { from: e.to, to: e.from } : e));
  const layerOf = longestPathLayers(ids, downward);

  const slots = new Map<string, Slot>(nodes.map((n) => [n.id, { ...n, layer: layerOf.get(n.id)!, waypoint: false }]));
  const laid: LaidEdge[] = links.map((e, i) => {
    const up = reversed.has(routeKey(e.from, e.to));
    const [top, bottom] = up ? [e.to, e.from] : [e.from, e.to];
    const waypoints: string[] = [];
    for (let layer = layerOf.get(top)! + 1; layer < layerOf.get(bottom)!; layer++) {
      const id = `\u0000${i}:${layer}`;
      slots.set(id, { id, width: waypointWidth, height: 0, layer, waypoint: true });
      waypoints.push(id);
    }
    return { from: e.from, to: e.to, top, bottom, up, waypoints };
  });

  const layers: string[][] = [];
  for (const slot of slots.values()) (layers[slot.layer] ??= []).push(slot.id);
  const chains: [string, string][] = laid.flatMap((e) => {
    const path = [e.top, ...e.waypoints, e.bottom];
    return path.slice(1).map((to, k) => [path[k]!, to] as [string, string]);
  });
  orderByBarycentre(layers, chains, sweeps);

  // Coordinates: each layer's slots side by side, the layer centred on the widest.
  const rowHeight = Math.max(0, ...nodes.map((n) => n.height));
  const gapAfter = (row: string[], k: number) => (slots.get(row[k]!)!.waypoint || slots.get(row[k + 1]!)!.waypoint ? nodeGap / 2 : nodeGap);
  const rowWidths = layers.map((row) => row.reduce((w, id, k) => w + slots.get(id)!.width + (k + 1 < row.length ? gapAfter(row, k) : 0), 0));
  const width = Math.max(0, ...rowWidths);
  const boxes = new Map<string, LayoutBox>();
  const centre = new Map<string, Point>();
  layers.forEach((row, layer) => {
    let x = (width - rowWidths[layer]!) / 2;
    const y = layer * (rowHeight + layerGap);
    row.forEach((id, k) => {
      const slot = slots.get(id)!;
      if (!slot.waypoint) boxes.set(id, { id, x, y: y + (rowHeight - slot.height) / 2, width: slot.width, height: slot.height, layer });
      centre.set(id, { x: x + slot.width / 2, y: y + rowHeight / 2 });
      x += slot.width + (k + 1 < row.length ? gapAfter(row, k) : 0);
    });
  });

  // Ports: the edges leaving a node's bottom (or entering its top) spread along it, in the order of where they go.
  const bottomPorts = new Map<string, LaidEdge[]>();
  const topPorts = new Map<string, LaidEdge[]>();
  for (const e of laid) {
    (bottomPorts.get(e.top) ?? bottomPorts.set(e.top, []).get(e.top)!).push(e);
    (topPorts.get(e.bottom) ?? topPorts.set(e.bottom, []).get(e.bottom)!).push(e);
  }
  const portX = (node: string, e: LaidEdge, ports: Map<string, LaidEdge[]>, toward: (e: LaidEdge) => string): number => {
    const box = boxes.get(node)!;
    const list = ports.get(node)!;
    const sorted = [...list].sort((a, b) => centre.get(toward(a))!.x - centre.get(toward(b))!.x);
    const k = sorted.indexOf(e);
    return box.x + (box.width * (k + 1)) / (sorted.length + 1);
  };
  const routes = new Map<string, Point[]>();
  for (const e of laid) {
    const topBox = boxes.get(e.top)!;
    const bottomBox = boxes.get(e.bottom)!;
    const first = e.waypoints[0] ?? e.bottom;
    const last = e.waypoints[e.waypoints.length - 1] ?? e.top;
    const start = { x: portX(e.top, e, bottomPorts, () => first), y: topBox.y + topBox.height };
    const end = { x: portX(e.bottom, e, topPorts, () => last), y: bottomBox.y };
    const points = [start, ...e.waypoints.map((w) => centre.get(w)!), end];
    routes.set(routeKey(e.from, e.to), e.up ? points.reverse() : points);
  }
  return { boxes, routes, width, height: layers.length === 0 ? 0 : layers.length * rowHeight + (layers.length - 1) * layerGap };
}

/** Each (from, to) once, self-loops left out. */
function uniqueLinks(edges: readonly { from: string; to: string }[]): { from: string; to: string }[] {
  const seen = new Set<string>();
  const out: { from: string; to: string }[] = [];
  for (const e of edges) {
    const key = routeKey(e.from, e.to);
    if (e.from === e.to || seen.has(key)) continue;
    seen.add(key);
    out.push({ from: e.from, to: e.to });
  }
  return out;
}

/** The edges a depth-first search (from `root` first, then each node not yet reached) finds going back up its stack. */
export function backEdges(ids: readonly string[], links: readonly { from: string; to: string }[], root?: string): Set<string> {
  const out = new Map<string, string[]>();
  for (const e of links) (out.get(e.from) ?? out.set(e.from, []).get(e.from)!).push(e.to);
  const status = new Map<string, "open" | "done">();
  const back = new Set<string>();
  const visit = (start: string): void => {
    // Iterative, with an explicit stack of (node, next child index).
    const stack: [string, number][] = [[start, 0]];
    status.set(start, "open");
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const children = out.get(top[0]) ?? [];
      if (top[1] >= children.length) {
        status.set(top[0], "done");
        stack.pop();
        continue;
      }
      const child = children[top[1]++]!;
      const seen = status.get(child);
      if (seen === "open") back.add(routeKey(top[0], child));
      else if (seen === undefined) {
        status.set(child, "open");
        stack.push([child, 0]);
      }
    }
  };
  if (root !== undefined && ids.includes(root)) visit(root);
  for (const id of ids) if (!status.has(id)) visit(id);
  return back;
}

/** Layer of each node: the longest path to it from a node with no edge in (which sits in layer 0). */
function longestPathLayers(ids: readonly string[], dag: readonly { from: string; to: string }[]): Map<string, number> {
  const indegree = new Map(ids.map((id) => [id, 0]));
  const out = new Map<string, string[]>();
  for (const e of dag) {
    indegree.set(e.to, indegree.get(e.to)! + 1);
    (out.get(e.from) ?? out.set(e.from, []).get(e.from)!).push(e.to);
  }
  const layer = new Map(ids.map((id) => [id, 0]));
  const ready = ids.filter((id) => indegree.get(id) === 0);
  while (ready.length > 0) {
    const id = ready.shift()!;
    for (const to of out.get(id) ?? []) {
      layer.set(to, Math.max(layer.get(to)!, layer.get(id)! + 1));
      indegree.set(to, indegree.get(to)! - 1);
      if (indegree.get(to) === 0) ready.push(to);
    }
  }
  return layer;
}

/** Sorts each layer by the mean position of its slots' neighbours in the layer above (down sweeps) or below (up sweeps). */
function orderByBarycentre(layers: string[][], chains: readonly [string, string][], sweeps: number): void {
  const above = new Map<string, string[]>();
  const below = new Map<string, string[]>();
  for (const [a, b] of chains) {
    (below.get(a) ?? below.set(a, []).get(a)!).push(b);
    (above.get(b) ?? above.set(b, []).get(b)!).push(a);
  }
  const position = new Map<string, number>();
  const place = (row: string[]) => row.forEach((id, k) => position.set(id, k / Math.max(1, row.length - 1)));
  layers.forEach(place);
  const sortLayer = (row: string[], neighbours: Map<string, string[]>) => {
    const centre = new Map<string, number>();
    for (const id of row) {
      const ns = neighbours.get(id) ?? [];
      centre.set(id, ns.length === 0 ? position.get(id)! : ns.reduce((s, n) => s + position.get(n)!, 0) / ns.length);
    }
    // A stable sort: ties keep their order.
    row.sort((a, b) => centre.get(a)! - centre.get(b)!);
    place(row);
  };
  for (let s = 0; s < sweeps; s++) {
    for (let i = 1; i < layers.length; i++) sortLayer(layers[i]!, above);
    for (let i = layers.length - 2; i >= 0; i--) sortLayer(layers[i]!, below);
  }
}
