/** Subject names, identical on every transport. */
export const subjects = (cluster: string) => {
  const scheduler = `natsched.${cluster}.scheduler`;
  return {
    /**
     * Client ops to the scheduler from anyone who may publish here (clients written in other
     * languages; an operator may deny it). Worker ops are refused here.
     */
    scheduler,
    /** Worker `<name>`'s ops to the scheduler: every op must name that worker (docs/nats.md, "Roles"). */
    workerOps: perName(`${scheduler}.worker.`),
    /** Client `<id>`'s ops to the scheduler (natsched's Client): every op must name that client. */
    clientOps: perName(`${scheduler}.client.`),
    /** Every subject below the scheduler's: what it subscribes to besides `scheduler`. */
    schedulerTree: `${scheduler}.>`,
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
    /** Who a message on one of the scheduler's subjects comes from, as far as its subject says. */
    senderOf: cachedSenderOf(scheduler),
  };
};

export type Subjects = ReturnType<typeof subjects>;

/**
 * The role a subject to the scheduler stands for. Server permissions decide who may publish
 * on which (docs/nats-roles.conf); the scheduler checks that each op fits the role and names
 * the worker or client of its subject (actors/host/op-roles.ts).
 */
export type SchedulerSender =
  /** `id` null: the bare subject, any client. */
  | { readonly role: "client"; readonly id: string | null }
  | { readonly role: "worker"; readonly name: string };

const ANY_CLIENT: SchedulerSender = { role: "client", id: null };

function senderOf(scheduler: string, subject: string): SchedulerSender | undefined {
  if (subject === scheduler) return ANY_CLIENT;
  if (!subject.startsWith(scheduler) || subject.charCodeAt(scheduler.length) !== 46 /* . */) return undefined;
  const rest = subject.slice(scheduler.length + 1);
  const dot = rest.indexOf(".");
  if (dot < 0) return undefined;
  const kind = rest.slice(0, dot);
  const name = rest.slice(dot + 1);
  if (name.length === 0 || name.includes(".")) return undefined;
  if (kind === "worker") return { role: "worker", name };
  if (kind === "client") return { role: "client", id: name };
  return undefined;
}

/** `senderOf`, read once per subject: the scheduler takes message after message on the same few. */
function cachedSenderOf(scheduler: string): (subject: string) => SchedulerSender | undefined {
  const read = new Map<string, SchedulerSender | null>();
  return (subject) => {
    let sender = read.get(subject);
    if (sender === undefined) {
      if (read.size >= MAX_CACHED_NAMES) read.clear();
      sender = senderOf(scheduler, subject) ?? null;
      read.set(subject, sender);
    }
    return sender ?? undefined;
  };
}

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
