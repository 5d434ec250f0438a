/**
 * Adding an op to the ops one actor sends one destination in one turn: the real actors'
 * Outbox and the simulator's kernel both batch through this, so every host sends the same
 * envelopes. A `free-keys` right after another with the same stamp (run and attempt) joins
 * it: the worker handles the keys of one op one after another, exactly as it would handle
 * the ops, and releasing 20,000 keys no longer takes 20,000 ops (and as many worker inputs
 * and log records). Only ops with the same `cause` join: each key keeps the stimulus that
 * freed it (docs/log-format.md, "Causes").
 */
interface FreeKeysLike {
  op: "free-keys";
  keys: string[];
  run?: number;
  attempt?: number;
  cause?: number;
}

/** free-keys ops whose `keys` array this module copied, and may therefore extend. */
const ownKeys = new WeakSet<object>();

function isFreeKeys(op: unknown): op is FreeKeysLike {
  return typeof op === "object" && op !== null && (op as { op?: unknown }).op === "free-keys" && Array.isArray((op as { keys?: unknown }).keys);
}

export function appendOp<Op>(ops: Op[], op: Op): void {
  const last = ops.length > 0 ? ops[ops.length - 1] : undefined;
  if (isFreeKeys(last) && isFreeKeys(op) && last.run === op.run && last.attempt === op.attempt && last.cause === op.cause) {
    if (!ownKeys.has(last)) {
      // The op's array may be the sender's own: extend a copy.
      const merged = { ...last, keys: last.keys.slice() };
      ownKeys.add(merged);
      ops[ops.length - 1] = merged as Op;
      merged.keys.push(...op.keys);
    } else {
      last.keys.push(...op.keys);
    }
    return;
  }
  ops.push(op);
}
