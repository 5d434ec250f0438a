/**
 * The process's log writer thread, shared by every open FileLogSink: sinks hand it
 * captured batches (log/log-capture.ts) and the thread writes them in order
 * (log/log-format-thread.ts: a frame per batch, or JSON lines for a version-1 log), so
 * checksums, encoding and file writes cost the actors' thread nothing but the capture and
 * one copy.
 *
 * Batches travel through slots of one SharedArrayBuffer (no buffers change hands, which
 * would churn V8's external memory accounting and bring on garbage collections): a sink
 * copies its batch into a free slot and posts `batch {log, seq, slot, n, c, records, ack}`; the
 * thread writes it and frees the slot. It answers `done {log, seq, error?}` only when asked
 * (`ack`, or `sync {log, seq}` once the batches before it are written) or when a write failed:
 * a log flushed by its timer costs the actors' thread no wake-up for an answer. A batch too
 * big for a slot travels as its own arrays instead. Other messages: `open {log, fd, v}`,
 * `forget {log}`.
 * With every slot taken the producer waits for one (backpressure) instead of queueing
 * memory. Acks are read both from the event loop and synchronously at every post (an
 * actor burst can keep the event loop from turning for seconds).
 */
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";
import { captureDecoderProgram } from "./capture-decoder.js";
import { CAPTURE_TAGS } from "./capture-tags.js";
import { logWriterProgram } from "./log-format-thread.js";

/** Capture per batch: doubles and code units (256 KiB each). */
export const BATCH_NUMS = 32 * 1024;
export const BATCH_CHARS = 128 * 1024;
/**
 * Slots of BATCH_NUMS doubles and BATCH_CHARS code units: 32 MiB of shared memory, mapped
 * but touched only as far as bursts reach (the lowest free slot is taken first). A burst of
 * records (an update-graph of 100,000 tasks queues them all in one stimulus) arrives while
 * the thread is still formatting that submission's own huge input record: with few slots
 * the main thread would wait for the thread at every large submission.
 */
const SLOTS = 64;
/** Give up waiting for a free slot after this long (the thread is then most likely gone). */
const MAX_WAIT_MS = 30_000;

export interface WriterLog {
  /**
   * Batches up to `seq` of this log are written (or, after `error`, dropped): told for a batch
   * posted with `ack`, for a `sync`, and for a write that failed.
   */
  done(seq: number, error: Error | undefined): void;
  /** The thread died: nothing more will be written. */
  lost(error: Error): void;
}

interface Done {
  type: "done";
  log: number;
  seq: number;
  error?: { message: string; code?: string; errno?: number; syscall?: string };
}

/**
 * Where the slots live in the shared buffer: Int32 flags (one per slot, the count of frees,
 * the count of batches handled), then each slot's doubles and code units.
 */
export function slotLayout(slots: number): { bytes: number; numsAt: (slot: number) => number; charsAt: (slot: number) => number } {
  const flags = 8 * Math.ceil((4 * (slots + 2)) / 8);
  const slotBytes = BATCH_NUMS * 8 + BATCH_CHARS * 2;
  return {
    bytes: flags + slots * slotBytes,
    numsAt: (slot) => flags + slot * slotBytes,
    charsAt: (slot) => flags + slot * slotBytes + BATCH_NUMS * 8,
  };
}

export class LogWriterThread {
  private static current: LogWriterThread | undefined;

  /** The process's writer thread, started on first use. */
  static shared(): LogWriterThread {
    if (LogWriterThread.current === undefined || LogWriterThread.current.dead) LogWriterThread.current = new LogWriterThread();
    return LogWriterThread.current;
  }

  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly memory: SharedArrayBuffer;
  /**
   * Per slot 0 (free) or 1 (taken); at index SLOTS, the count of frees (to wait on); at
   * SLOTS + 1, the count of batches the thread has handled (written, or dropped after a failure).
   */
  private readonly flags: Int32Array;
  /** Batches posted so far, of every log. */
  private posted = 0;
  private readonly slotNums: Float64Array[] = [];
  private readonly slotChars: Uint16Array[] = [];
  private readonly logs = new Map<number, WriterLog>();
  private nextLog = 1;
  private waiting = 0;
  private dead = false;

  private constructor() {
    const layout = slotLayout(SLOTS);
    this.memory = new SharedArrayBuffer(layout.bytes);
    this.flags = new Int32Array(this.memory, 0, SLOTS + 2);
    for (let slot = 0; slot < SLOTS; slot++) {
      this.slotNums.push(new Float64Array(this.memory, layout.numsAt(slot), BATCH_NUMS));
      this.slotChars.push(new Uint16Array(this.memory, layout.charsAt(slot), BATCH_CHARS));
    }
    const { port1, port2 } = new MessageChannel();
    const source = [
      "const __name = (f) => f;", // a transpiler keeping function names may refer to it
      `const decoders = (${captureDecoderProgram.toString()})(${JSON.stringify(CAPTURE_TAGS)});`,
      `const program = (${logWriterProgram.toString()})(decoders, require("node:zlib"));`,
      'const { workerData } = require("node:worker_threads");',
      'program.serve(workerData.port, require("node:fs"), workerData.memory, workerData.slots, workerData.nums, workerData.chars);',
    ].join("\n");
    this.worker = new Worker(source, {
      eval: true,
      workerData: { port: port2, memory: this.memory, slots: SLOTS, nums: BATCH_NUMS, chars: BATCH_CHARS },
      transferList: [port2],
      name: "natsched log writer",
    });
    this.worker.unref();
    this.worker.on("error", (err) => this.die(err));
    this.worker.on("exit", (code) => this.die(new Error(`the log writer thread exited (code ${code})`)));
    this.port = port1;
    this.port.on("message", (message: Done) => this.receive(message));
    this.port.unref();
  }

  /** Registers a log of format version `v` written to `fd`; returns its id for `post`. */
  open(fd: number, v: number, log: WriterLog): number {
    const id = this.nextLog++;
    this.logs.set(id, log);
    this.port.postMessage({ type: "open", log: id, fd, v });
    return id;
  }

  forget(id: number): void {
    if (!this.logs.delete(id) || this.dead) return;
    this.port.postMessage({ type: "forget", log: id });
  }

  /**
   * Hands the first `n` doubles and `c` code units of a batch of `records` records to the
   * thread: copied into a slot, so the arrays stay the caller's. A batch too big for a slot
   * travels as its own arrays: with `givesArrays` these very arrays (the caller drops them:
   * a batch grown for one huge record), otherwise copies. `ack`: answer `done` once it is
   * written (someone waits for it).
   */
  post(id: number, seq: number, nums: Float64Array, chars: Uint16Array, n: number, c: number, records: number, givesArrays = false, ack = false): void {
    if (this.dead) throw new Error("the log writer thread is gone");
    this.drain();
    if (n > BATCH_NUMS || c > BATCH_CHARS) {
      const ownNums = givesArrays ? nums : nums.slice(0, n);
      const ownChars = givesArrays ? chars : chars.slice(0, c);
      this.posted++;
      this.port.postMessage({ type: "batch", log: id, seq, slot: -1, nums: ownNums, chars: ownChars, n, c, records, ack }, [ownNums.buffer as ArrayBuffer, ownChars.buffer as ArrayBuffer]);
      return;
    }
    const slot = this.takeSlot();
    this.slotNums[slot]!.set(n === nums.length ? nums : nums.subarray(0, n));
    this.slotChars[slot]!.set(c === chars.length ? chars : chars.subarray(0, c));
    this.posted++;
    this.port.postMessage({ type: "batch", log: id, seq, slot, n, c, records, ack });
  }

  /**
   * The thread has handled every batch posted (of every log), and the answers it gave are
   * taken: a log may then write its next batch itself and stay in order (FileLogSink does for
   * a small one, cheaper than waking the thread).
   */
  idle(): boolean {
    if (this.dead) return false;
    this.drain();
    return Atomics.load(this.flags, SLOTS + 1) === this.posted;
  }

  /** Asks for `done(seq)` once every batch posted before this is written. */
  sync(id: number, seq: number): void {
    if (this.dead) throw new Error("the log writer thread is gone");
    this.port.postMessage({ type: "sync", log: id, seq });
  }

  /** Keeps the process alive while a log waits for its writes (flush, close). */
  hold(): void {
    if (this.waiting++ === 0) this.port.ref();
  }

  release(): void {
    if (--this.waiting === 0) this.port.unref();
  }

  /** The lowest free slot, taken (so quiet periods reuse the same few); waits for the thread to free one if need be. */
  private takeSlot(): number {
    const flags = this.flags;
    const deadline = Date.now() + MAX_WAIT_MS;
    for (;;) {
      const frees = Atomics.load(flags, SLOTS);
      for (let k = 0; k < SLOTS; k++) {
        if (Atomics.load(flags, k) === 0) {
          Atomics.store(flags, k, 1);
          return k;
        }
      }
      if (Date.now() > deadline) throw new Error(`the log writer thread freed no batch slot in ${MAX_WAIT_MS / 1000} s`);
      Atomics.wait(flags, SLOTS, frees, 100);
    }
  }

  /** Handles the acks that have arrived, without waiting for the event loop. */
  private drain(): void {
    for (let message = receiveMessageOnPort(this.port); message !== undefined; message = receiveMessageOnPort(this.port)) {
      this.receive(message.message as Done);
    }
  }

  private receive(message: Done): void {
    if (message.type !== "done") return;
    let error: Error | undefined;
    if (message.error !== undefined) {
      const { message: text, ...details } = message.error;
      error = new Error(text);
      for (const [key, value] of Object.entries(details)) if (value !== undefined) (error as unknown as Record<string, unknown>)[key] = value;
    }
    this.logs.get(message.log)?.done(message.seq, error);
  }

  private die(error: Error): void {
    if (this.dead) return;
    this.dead = true;
    this.drain();
    for (const log of this.logs.values()) log.lost(error);
    this.logs.clear();
  }
}
