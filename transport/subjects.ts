/** Subject names, identical on every transport. */
export const subjects = (cluster: string) => ({
  scheduler: `natsched.${cluster}.scheduler`,
  /** Read-only questions to the scheduler (workers, who-has): answered, never logged. */
  query: `natsched.${cluster}.query`,
  worker: perName(`natsched.${cluster}.worker.`),
  workerData: perName(`natsched.${cluster}.data.`),
  client: perName(`natsched.${cluster}.client.`),
  /** A scheduler starting a new run says so here: workers register again, clients resubmit (docs/nats.md). */
  announce: `natsched.${cluster}.announce.scheduler`,
  /** A worker whose connection came back says so here: the scheduler resyncs it (docs/nats.md). */
  workerBack: `natsched.${cluster}.announce.worker`,
  /**
   * The scheduler heard a heartbeat from a worker it does not have (it removed it, or never
   * had it): the worker registers again (Dask's heartbeat answered "missing"; docs/nats.md).
   */
  workerMissing: perName(`natsched.${cluster}.announce.missing.`),
  all: `natsched.${cluster}.>`,
});

export type Subjects = ReturnType<typeof subjects>;

/** Past this many names a subject cache starts over (clients come and go). */
const MAX_CACHED_NAMES = 4096;

/**
 * `prefix + name`, made once per name: an actor sends to the same few subjects op after op,
 * and the same string each time costs no concatenation, and its hash is computed once for
 * every Map it is looked up in.
 */
function perName(prefix: string): (name: string) => string {
  const made = new Map<string, string>();
  return (name) => {
    let subject = made.get(name);
    if (subject === undefined) {
      if (made.size >= MAX_CACHED_NAMES) made.clear();
      subject = prefix + name;
      made.set(name, subject);
    }
    return subject;
  };
}
