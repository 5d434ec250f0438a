import { getInitialSnapshot, getNextSnapshot, type AnyStateMachine, type StateValue } from "xstate";

/**
 * A transition table derived from an XState machine definition, so the hot path looks a
 * transition up instead of paying XState's per-call interpretation. The machine stays the
 * single definition of behaviour: the table is built by asking XState itself, for every
 * reachable state and every event, where the machine goes (tests/machines-compiled.test.ts
 * checks the two agree on random walks).
 *
 * States are dot paths ("processing.stealing"); a missing entry means the event is not
 * accepted in that state.
 */
export interface CompiledMachine<S extends string = string, E extends string = string> {
  readonly id: string;
  readonly initial: S;
  readonly states: readonly S[];
  readonly events: readonly E[];
  /** Next state, or undefined when the machine does not accept the event there. */
  next(state: S, event: E): S | undefined;
  /** The state's top-level name ("processing" for "processing.stealing"). */
  top(state: S): string;
  isFinal(state: S): boolean;
}

export function stateKey(value: StateValue): string {
  if (typeof value === "string") return value;
  const [name, child] = Object.entries(value)[0]!;
  return `${name}.${stateKey(child as StateValue)}`;
}

function stateValueOf(key: string): StateValue {
  const parts = key.split(".");
  let value: StateValue = parts[parts.length - 1]!;
  for (let i = parts.length - 2; i >= 0; i--) value = { [parts[i]!]: value };
  return value;
}

export function compileMachine<S extends string, E extends string>(machine: AnyStateMachine): CompiledMachine<S, E> {
  const events = (machine.events as string[]).filter((e) => !e.startsWith("xstate.")) as E[];
  const initialSnapshot = getInitialSnapshot(machine);
  const initial = stateKey(initialSnapshot.value) as S;
  const table = new Map<string, Map<string, string>>();
  const finals = new Set<string>();
  const pending = [initial as string];
  while (pending.length > 0) {
    const key = pending.pop()!;
    if (table.has(key)) continue;
    const row = new Map<string, string>();
    table.set(key, row);
    const snapshot = machine.resolveState({ value: stateValueOf(key), context: undefined });
    if (snapshot.status === "done") {
      finals.add(key);
      continue;
    }
    for (const type of events) {
      const event = { type };
      if (!snapshot.can(event)) continue;
      const target = stateKey(getNextSnapshot(machine, snapshot, event).value);
      row.set(type, target);
      if (!table.has(target)) pending.push(target);
    }
  }
  const states = [...table.keys()].sort() as S[];
  const tops = new Map(states.map((s) => [s, s.split(".")[0]!]));
  return {
    id: machine.id,
    initial,
    states,
    events,
    next: (state, event) => table.get(state)?.get(event) as S | undefined,
    top: (state) => tops.get(state) ?? state,
    isFinal: (state) => finals.has(state),
  };
}
