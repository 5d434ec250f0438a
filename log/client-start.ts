/**
 * The `init` of a client's start record (role "client"): the ClientInit its core was built
 * with, written by the client host and read back by replay (as start-init.ts does for the
 * scheduler and the workers).
 */
import type { ClientInit } from "../machines/client/inputs.js";

const NUMBERS = ["requestTimeout", "resumeWait", "heartbeatEvery", "resumingEvery", "resumingMissed"] as const;

/** JSON cannot carry Infinity (a client without heartbeats): it is stored as the string "Infinity". */
export function clientStartInit(init: ClientInit): Record<string, unknown> {
  const out: Record<string, unknown> = { id: init.id, cluster: init.cluster, opsSubject: init.opsSubject };
  for (const name of NUMBERS) out[name] = Number.isFinite(init[name]) ? init[name] : String(init[name]);
  return out;
}

/** Throws an Error naming what is missing when the record cannot rebuild a client. */
export function readClientStart(init: Record<string, unknown>): ClientInit {
  const { id, cluster, opsSubject } = init;
  if (typeof id !== "string" || typeof cluster !== "string" || typeof opsSubject !== "string") {
    throw new Error("a client's start record needs id, cluster and opsSubject");
  }
  const out = { id, cluster, opsSubject } as ClientInit;
  for (const name of NUMBERS) {
    const value = init[name];
    const n = value === "Infinity" ? Infinity : value;
    if (typeof n !== "number" || Number.isNaN(n)) throw new Error(`a client's start record needs ${name} (a number), got ${JSON.stringify(value)}`);
    out[name] = n;
  }
  return out;
}
