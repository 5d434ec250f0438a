/**
 * A client's core rebuilt from its start record (role "client", log/client-start.ts), for
 * replay: each recorded input is fed again, its time turned back into the milliseconds the
 * live core was given (actors/client-recording.ts), and the futures' transitions go to the
 * replay's checks. The instructions the core gives are counted as what it sent.
 */
import { readClientStart } from "../log/client-start.js";
import { ClientCore } from "../machines/client/core.js";
import type { ClientInput } from "../machines/client/inputs.js";
import type { InputRecord } from "../log/types.js";
import type { ReplayEffects } from "./replay-cores.js";

/** The instructions that put something on the wire, counted by their `do`. */
const SENDS: ReadonlySet<string> = new Set(["request", "publish", "query", "fetch"]);

export class ClientHost {
  readonly role = "client";
  readonly core: ClientCore;

  constructor(
    init: Record<string, unknown>,
    private readonly fx: ReplayEffects,
  ) {
    this.core = new ClientCore(readClientStart(init), { transition: (machine, id, event, from, to) => fx.transition(machine, id, event, from, to) });
  }

  handle(event: InputRecord["event"]): void {
    const input = Object.assign({}, event) as unknown as ClientInput;
    input.t = (event.t as number) * 1000;
    for (const instruction of this.core.handle(input)) if (SENDS.has(instruction.do)) this.fx.sent(instruction.do);
  }

  /** A future as the core holds it (machine "future"; anything else: none). */
  snapshot(machine: string, id: string): unknown {
    if (machine !== "future") return undefined;
    return this.core.futures().find((f) => f.key === id);
  }
}
