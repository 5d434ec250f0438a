import { compileMachine } from "../compile.js";
import { futureMachine, type FutureEvent } from "../definitions/future.js";

/** A future's state: its status. */
export type FutureStateName = "pending" | "finished" | "error" | "cancelled";
export type FutureEventName = FutureEvent["type"];

export const FUTURE = compileMachine<FutureStateName, FutureEventName>(futureMachine);

export { futureMachine };

/** Where a client core reports its futures' transitions (its host records them; replay checks them). */
export interface ClientEffects {
  transition(machine: "future", id: string, event: FutureEventName, from: FutureStateName, to: FutureStateName): void;
}
