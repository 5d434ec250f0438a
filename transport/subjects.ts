/** Subject names, identical on every transport. */
export const subjects = (cluster: string) => ({
  scheduler: `natsched.${cluster}.scheduler`,
  /** Read-only questions to the scheduler (workers, who-has): answered, never logged. */
  query: `natsched.${cluster}.query`,
  worker: (name: string) => `natsched.${cluster}.worker.${name}`,
  workerData: (name: string) => `natsched.${cluster}.data.${name}`,
  client: (id: string) => `natsched.${cluster}.client.${id}`,
  /** A scheduler starting a new run says so here: workers register again, clients resubmit (docs/nats.md). */
  announce: `natsched.${cluster}.announce.scheduler`,
  all: `natsched.${cluster}.>`,
});

export type Subjects = ReturnType<typeof subjects>;
