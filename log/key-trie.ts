/**
 * Nodes of a trie of key sequences: how the compact log's tape and the file log's capture
 * recognise an object's shape (its keys, in order) while they walk its keys, for the price
 * of one string comparison per key when objects of a kind come one after another.
 */
export abstract class KeyNode<N extends KeyNode<N>> {
  private lastKey: string | undefined = undefined;
  private lastNext: N | undefined = undefined;
  private children: Map<string, N> | undefined = undefined;

  constructor(
    readonly parent: N | null,
    /** The last key of the sequence. */
    readonly key: string,
    /** How many keys the sequence has. */
    readonly size: number,
  ) {}

  /** The node one key further, if there is one (the one taken last time is found by one comparison). */
  next(key: string): N | undefined {
    if (key === this.lastKey) return this.lastNext;
    const next = this.children?.get(key);
    if (next !== undefined) {
      this.lastKey = key;
      this.lastNext = next;
    }
    return next;
  }

  /** Adds a node one key further (whose parent is this one). */
  add(child: N): N {
    (this.children ??= new Map()).set(child.key, child);
    this.lastKey = child.key;
    this.lastNext = child;
    return child;
  }

  /** The keys from the root to here. */
  keys(): string[] {
    const keys = new Array<string>(this.size);
    for (let node = this as unknown as N; node.parent !== null; node = node.parent) keys[node.size - 1] = node.key;
    return keys;
  }
}
