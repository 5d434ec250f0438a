export type * from "./types.js";
export * from "./subjects.js";
export { MemoryBus, MemoryTransport } from "./memory.js";
export type { BusStats, MemoryBusOptions } from "./memory.js";
export { isValidPattern, isValidSubject, subjectMatches, SubscriptionIndex } from "./subject-match.js";
