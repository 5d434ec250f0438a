import type { ClientInit, ClientStimulus } from "../machines/client/inputs.js";
import type { ClientEffects, FutureEventName, FutureStateName } from "../machines/client/future-table.js";
import type { LogSink } from "../log/types.js";
import { ActorRecorder } from "./host/recorder.js";
import { withTime } from "./host/with-time.js";
import { stampCause } from "./host/causes.js";

/**
 * A client recorded as actor `client.<id>`: its start (the core's init), every stimulus its
 * core takes, the transitions of its futures, its stop. Inputs are stamped in seconds, as
 * every record is; the core is fed the same instant in milliseconds (t * 1000), which replay
 * computes again from the record, so the core sees the very same numbers.
 *
 * Nothing is recorded after the stop record: a late answer or timer still reaches the closed
 * core (which does nothing with it), but the actor's log ends where the client closed.
 */
export class ClientRecording implements ClientEffects {
  private stopped = false;

  private constructor(private readonly recorder: ActorRecorder) {}

  /** Null when `sink` keeps nothing. Writes the start record at `t`, with seq `firstSeq`. */
  static open(sink: LogSink | null, init: ClientInit, t: number, firstSeq = 0): ClientRecording | null {
    const recorder = new ActorRecorder(`client.${init.id}`, sink, firstSeq);
    if (!recorder.enabled) return null;
    recorder.startClient(t, init);
    return new ClientRecording(recorder);
  }

  input(stimulus: ClientStimulus, t: number): void {
    if (!this.stopped) this.recorder.input(withTime(stimulus, t));
  }

  transition(machine: "future", id: string, event: FutureEventName, from: FutureStateName, to: FutureStateName): void {
    if (!this.stopped) this.recorder.transition(machine, id, event, from, to);
  }

  /** Names on an op the client sends the input it is handling (docs/protocol.md, "Causes"). */
  stamp<Op extends object>(op: Op): Op {
    return this.stopped ? op : stampCause(op, this.recorder);
  }

  stop(t: number, reason?: string): void {
    if (this.stopped) return;
    this.stopped = true;
    this.recorder.stop(t, reason);
  }
}
