/**
 * What `GET /api/machines` answers: each machine definition as a graph, with how many
 * instances sit in each state at the cut and how often each edge was taken up to it.
 * Types only (no imports), so the page can import them as they are.
 */

export interface MachineStateView {
  /** The state as the log names it: a dot path for a nested state ("processing.stealing"). */
  id: string;
  /** The compound state it sits in ("processing"), when nested. */
  parent?: string;
  initial: boolean;
  final: boolean;
  /** Instances whose last transition (up to the cut) led here. */
  count: number;
}

export interface MachineEdgeView {
  from: string;
  to: string;
  event: string;
  /** Transitions along this edge in the log up to the cut. */
  taken: number;
}

export interface MachineView {
  /** The machine's name as transition records give it: "task", "wtask", "worker", "scheduler", "future". */
  id: string;
  /** Who runs it, in words. */
  title: string;
  states: MachineStateView[];
  edges: MachineEdgeView[];
  /** Distinct instances (actor and id) the log moved. */
  instances: number;
  /** Transitions of this machine the definition has no edge for (a log written by another build), counted apart. */
  offGraph: { from: string; to: string; event: string; taken: number }[];
}

export interface MachinesView {
  machines: MachineView[];
  /** Records read (up to the cut) and the cut in words. */
  records: number;
  cut: string;
  /** Set when the counts are of a live cluster's latest records only: says so. */
  partial?: string;
}
