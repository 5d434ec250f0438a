/**
 * `{ ...op, t }`, built as Object.assign then one assignment. On the embedded cluster a
 * spread left every compute-task, task-finished and free-keys input with a
 * map of its own (V8 hidden classes), so every later read of their fields (the machines,
 * the event log's capture) went through megamorphic lookups; this way inputs of one kind
 * share a map.
 */
export function withTime<Op extends object>(op: Op, t: number): Op & { t: number } {
  const input = Object.assign({}, op) as Op & { t: number };
  input.t = t;
  return input;
}
