/**
 * A layered layout for a small directed graph (a machine's states, tens of nodes): cycles
 * broken by a depth-first search from the root (back edges count reversed), layers by the
 * longest path from a source, the order in each layer by barycentres (a few sweeps down and
 * up), then nodes side by side in their layer, each layer centred. No DOM: sizes in, boxes out.
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

export interface Layout {
  boxes: Map<string, LayoutBox>;
  width: number;
  height: number;
}

export interface LayoutOptions {
  /** The node the search for cycles starts from (the machine's initial state). */
  root?: string;
  layerGap?: number;
  nodeGap?: number;
  /** Barycentre sweeps (each one down and one up). */
  sweeps?: number;
}

export function layoutGraph(nodes: readonly LayoutInputNode[], edges: readonly { from: string; to: string }[], options: LayoutOptions = {}): Layout {
  const { layerGap = 70, nodeGap = 28, sweeps = 4 } = options;
  const ids = nodes.map((n) => n.id);
  const known = new Set(ids);
  for (const e of edges) {
    if (!known.has(e.from) || !known.has(e.to)) throw new Error(`edge ${e.from} -> ${e.to} names a node the graph does not have`);
  }
  const dag = acyclicEdges(ids, edges, options.root);
  const layerOf = longestPathLayers(ids, dag);
  const layers: string[][] = [];
  for (const id of ids) (layers[layerOf.get(id)!] ??= []).push(id);
  orderByBarycentre(layers, dag, sweeps);

  const byId = new Map(nodes.map((n) => [n.id, n]));
  const rowHeight = Math.max(0, ...nodes.map((n) => n.height));
  const rowWidths = layers.map((row) => row.reduce((w, id) => w + byId.get(id)!.width, 0) + nodeGap * Math.max(0, row.length - 1));
  const width = Math.max(0, ...rowWidths);
  const boxes = new Map<string, LayoutBox>();
  layers.forEach((row, layer) => {
    let x = (width - rowWidths[layer]!) / 2;
    const y = layer * (rowHeight + layerGap);
    for (const id of row) {
      const node = byId.get(id)!;
      boxes.set(id, { id, x, y: y + (rowHeight - node.height) / 2, width: node.width, height: node.height, layer });
      x += node.width + nodeGap;
    }
  });
  return { boxes, width, height: layers.length === 0 ? 0 : layers.length * rowHeight + (layers.length - 1) * layerGap };
}

/** The edges with each back edge of a depth-first search turned round and self-loops left out. */
export function acyclicEdges(ids: readonly string[], edges: readonly { from: string; to: string }[], root?: string): { from: string; to: string }[] {
  const out = new Map<string, string[]>();
  for (const e of edges) if (e.from !== e.to) (out.get(e.from) ?? out.set(e.from, []).get(e.from)!).push(e.to);
  const status = new Map<string, "open" | "done">();
  const reversed = new Set<string>();
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
      if (seen === "open") reversed.add(`${top[0]}\n${child}`);
      else if (seen === undefined) {
        status.set(child, "open");
        stack.push([child, 0]);
      }
    }
  };
  if (root !== undefined && ids.includes(root)) visit(root);
  for (const id of ids) if (!status.has(id)) visit(id);
  const result: { from: string; to: string }[] = [];
  const added = new Set<string>();
  for (const e of edges) {
    if (e.from === e.to) continue;
    const flip = reversed.has(`${e.from}\n${e.to}`);
    const [from, to] = flip ? [e.to, e.from] : [e.from, e.to];
    const key = `${from}\n${to}`;
    if (!added.has(key)) {
      added.add(key);
      result.push({ from, to });
    }
  }
  return result;
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

/** Sorts each layer by the mean position of its nodes' neighbours in the layers above (down sweeps) or below (up sweeps). */
function orderByBarycentre(layers: string[][], dag: readonly { from: string; to: string }[], sweeps: number): void {
  const layerOf = new Map<string, number>();
  layers.forEach((row, i) => row.forEach((id) => layerOf.set(id, i)));
  const neighbours = new Map<string, string[]>();
  const link = (a: string, b: string) => (neighbours.get(a) ?? neighbours.set(a, []).get(a)!).push(b);
  for (const e of dag) {
    link(e.from, e.to);
    link(e.to, e.from);
  }
  const position = new Map<string, number>();
  const place = () => layers.forEach((row) => row.forEach((id, i) => position.set(id, i / Math.max(1, row.length - 1))));
  place();
  const sortLayer = (i: number, from: (layer: number) => boolean) => {
    const row = layers[i]!;
    const centre = new Map<string, number>();
    for (const id of row) {
      const ns = (neighbours.get(id) ?? []).filter((n) => from(layerOf.get(n)!));
      centre.set(id, ns.length === 0 ? position.get(id)! : ns.reduce((s, n) => s + position.get(n)!, 0) / ns.length);
    }
    // A stable sort: ties keep their order.
    row.sort((a, b) => centre.get(a)! - centre.get(b)!);
    row.forEach((id, k) => position.set(id, k / Math.max(1, row.length - 1)));
  };
  for (let s = 0; s < sweeps; s++) {
    for (let i = 1; i < layers.length; i++) sortLayer(i, (l) => l < i);
    for (let i = layers.length - 2; i >= 0; i--) sortLayer(i, (l) => l > i);
  }
}
