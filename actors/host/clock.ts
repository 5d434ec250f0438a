/** Where actors read the time: the host's clock, never the machines'. Seconds. */
export interface Clock {
  now(): number;
}

const origin = performance.timeOrigin / 1000;

/** Wall-clock seconds since the epoch, with sub-millisecond resolution. */
export const realClock: Clock = {
  now: () => origin + performance.now() / 1000,
};
