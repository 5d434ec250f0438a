/**
 * The simulator's agenda: a binary min-heap of events ordered by (time, insertion
 * sequence), so events at the same virtual time run in the order they were scheduled.
 */
interface Entry<T> {
  time: number;
  seq: number;
  item: T;
}

export class EventQueue<T> {
  private readonly heap: Entry<T>[] = [];
  private seq = 0;

  get size(): number {
    return this.heap.length;
  }

  push(time: number, item: T): void {
    const heap = this.heap;
    heap.push({ time, seq: this.seq++, item });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  /** The earliest event, removed; undefined when the queue is empty. */
  pop(): { time: number; item: T } | undefined {
    const heap = this.heap;
    const top = heap[0];
    if (top === undefined) return undefined;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < heap.length && before(heap[left]!, heap[smallest]!)) smallest = left;
        if (right < heap.length && before(heap[right]!, heap[smallest]!)) smallest = right;
        if (smallest === i) break;
        [heap[i], heap[smallest]] = [heap[smallest]!, heap[i]!];
        i = smallest;
      }
    }
    return { time: top.time, item: top.item };
  }
}

function before<T>(a: Entry<T>, b: Entry<T>): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}
