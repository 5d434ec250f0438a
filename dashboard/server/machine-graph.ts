/**
 * A machine definition as a graph, read from the XState definition itself: its state nodes
 * and the transitions each declares, so the diagram can never drift from the code. The
 * nodes are the leaf states as transition records name them ("processing.stealing"); a
 * transition a compound state declares leaves each of its leaves (unless the leaf declares
 * the event itself), and a transition into a compound state lands on its initial leaf, as
 * XState runs them.
 */
import type { AnyStateMachine } from "xstate";
import { futureMachine } from "../../machines/definitions/future.js";
import { schedulerMachine, taskMachine, workerMachine, workerTaskMachine } from "../../machines/tables.js";

export interface GraphState {
  id: string;
  parent?: string;
  initial: boolean;
  final: boolean;
}

export interface GraphEdge {
  from: string;
  to: string;
  event: string;
}

export interface MachineGraph {
  id: string;
  states: GraphState[];
  edges: GraphEdge[];
}

/** Every machine definition natsched has, with who runs it. */
export const MACHINE_DEFINITIONS: readonly { machine: AnyStateMachine; title: string }[] = [
  { machine: taskMachine, title: "the scheduler's view of a task" },
  { machine: workerTaskMachine, title: "a worker's view of a task" },
  { machine: workerMachine, title: "a worker's lifecycle (the scheduler's record and the worker's own)" },
  { machine: schedulerMachine, title: "the scheduler's lifecycle" },
  { machine: futureMachine, title: "a client's future for a key" },
];

/** The structural part of an XState state node this reads. */
interface Node {
  type: string;
  path: string[];
  states: Record<string, Node>;
  parent?: Node;
  transitions: Map<string, { target?: readonly Node[]; guard?: unknown }[]>;
  initial?: { target: readonly Node[] };
}

const nameOf = (node: Node): string => node.path.join(".");

/** The leaf a transition into `node` lands on: down the initial states. */
function landing(node: Node): Node {
  let at = node;
  while (at.type === "compound") at = at.initial!.target[0]!;
  return at;
}

function leaves(node: Node): Node[] {
  const children = Object.values(node.states);
  if (children.length === 0) return [node];
  return children.flatMap(leaves);
}

export function graphOf(machine: AnyStateMachine): MachineGraph {
  const root = machine.root as unknown as Node;
  for (const node of allNodes(root)) {
    if (node.type === "parallel" || node.type === "history") throw new Error(`machine ${machine.id}: ${nameOf(node)} is a ${node.type} state, which the graph does not draw`);
  }
  const initial = landing(root);
  const states: GraphState[] = leaves(root).map((leaf) => ({
    id: nameOf(leaf),
    ...(leaf.parent !== root && leaf.parent !== undefined ? { parent: nameOf(leaf.parent) } : {}),
    initial: leaf === initial,
    final: leaf.type === "final",
  }));
  const edges: GraphEdge[] = [];
  for (const leaf of leaves(root)) {
    const seen = new Set<string>();
    // Innermost first: a leaf's own transition for an event hides its parent's.
    for (let at: Node | undefined = leaf; at !== undefined && at !== root; at = at.parent) {
      for (const [event, candidates] of at.transitions) {
        if (seen.has(event)) continue;
        seen.add(event);
        const targets = new Set<string>();
        for (const candidate of candidates) {
          const to = candidate.target === undefined || candidate.target.length === 0 ? [leaf] : candidate.target.map(landing);
          for (const node of to) targets.add(nameOf(node));
          if (candidate.guard === undefined) break;
        }
        for (const to of targets) edges.push({ from: nameOf(leaf), to, event });
      }
    }
  }
  return { id: machine.id, states, edges };
}

function allNodes(node: Node): Node[] {
  return [node, ...Object.values(node.states).flatMap(allNodes)];
}
