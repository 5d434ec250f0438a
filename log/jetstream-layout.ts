/**
 * Where a cluster's event log lives in JetStream, and how to name it (docs/nats.md, "Event
 * log in JetStream"):
 *
 *   stream   NATSCHED_LOG_<cluster>
 *   subjects natsched.<cluster>.log              the log's header (one message)
 *            natsched.<cluster>.log.<actor>      one actor's records: .log.scheduler, .log.worker.w1, ...
 *
 * A location names a cluster's log on a server: `nats://[user:pass@]host:port/<cluster>`
 * (`nats://token@host:port/<cluster>`, or `tls://...`). Credentials in the URL are used
 * (transport/nats-connect.ts), explicit connection options (the log tools' --user,
 * --password, --token, --creds, --nkey, --tls-* flags) win over them, and the environment's
 * (NATS_CREDS, NATS_NKEY, NATS_USER, NATS_TOKEN, NATS_CA/CERT/KEY) apply as for every NATS
 * command. A location is printed without its password or token.
 */
import { BadOptionError } from "../machines/errors.js";
import { redactUrls } from "../transport/url-credentials.js";

/** Header of a message that holds one part of a record too large for one message: `<index>/<count>`. */
export const PART_HEADER = "Natsched-Part";
/** PART_HEADER value of a marker that voids an unfinished multi-part record before it (a writer died mid-record). */
export const ABANDON_PART = "abandon";
export const MSG_ID_HEADER = "Nats-Msg-Id";
export const EXPECTED_LAST_SUBJECT_SEQ_HEADER = "Nats-Expected-Last-Subject-Sequence";

const CLUSTER_NAME = /^[A-Za-z0-9_-]+$/;
const ACTOR_NAME = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

export function logStreamName(cluster: string): string {
  checkCluster(cluster);
  return `NATSCHED_LOG_${cluster}`;
}

/** The subject of the log's header message. */
export function logHeaderSubject(cluster: string): string {
  return `natsched.${cluster}.log`;
}

/** Matches every actor's records (and not the header). */
export function logRecordsSubject(cluster: string): string {
  return `natsched.${cluster}.log.>`;
}

export function actorSubject(cluster: string, actor: string): string {
  if (!ACTOR_NAME.test(actor)) {
    throw new BadOptionError("actor", `a JetStream log needs actor names of letters, digits, '-', '_' and dots, got ${JSON.stringify(actor)}`);
  }
  return `natsched.${cluster}.log.${actor}`;
}

/** The actor whose records `subject` holds, or undefined if it is no actor subject of the cluster. */
export function actorOfSubject(cluster: string, subject: string): string | undefined {
  const prefix = `natsched.${cluster}.log.`;
  return subject.startsWith(prefix) && subject.length > prefix.length ? subject.slice(prefix.length) : undefined;
}

/**
 * The message id of a log message without its link: the actor and the seq of the first
 * record in the message, and for a part of a large record its index (or "abandon" for the
 * marker that voids an unfinished one). See `linkedMsgId`.
 */
export function logMsgId(actor: string, seq: number, part?: number | typeof ABANDON_PART): string {
  return part === undefined ? `${actor}:${seq}` : `${actor}:${seq}/${part}`;
}

/**
 * The id a writer publishes a log message under, `<actor>:<seq>[/<part>]@<link>`: `link` is
 * the stream sequence of the actor's log message it follows (0 for the first). The server
 * de-duplicates on it, so a publish retried after a lost ack is stored once; and it chains
 * the actor's messages, so a reader tells them from anything else published on the subject
 * (jetstream-chain.ts).
 */
export function linkedMsgId(baseId: string, link: number): string {
  return `${baseId}@${link}`;
}

export interface LogMsgId {
  actor: string;
  /** The seq of the message's first record (of the record it is a part of). */
  seq: number;
  /** The part index, "abandon", or undefined for a message of whole records. */
  part: number | typeof ABANDON_PART | undefined;
  /** The stream sequence of the message it follows; undefined in ids written before links (legacy). */
  link: number | undefined;
}

const MSG_ID = /^(.+):(\d+)(?:\/(\d+|abandon))?(?:@(\d+))?$/;

/** The parts of a log message id, or undefined if `id` is not one. */
export function parseLogMsgId(id: string | undefined | null): LogMsgId | undefined {
  if (!id) return undefined;
  const match = MSG_ID.exec(id);
  if (match === null) return undefined;
  const part = match[3] === undefined ? undefined : match[3] === ABANDON_PART ? ABANDON_PART : Number(match[3]);
  return { actor: match[1]!, seq: Number(match[2]), part, link: match[4] === undefined ? undefined : Number(match[4]) };
}

export function checkCluster(cluster: string): void {
  if (typeof cluster !== "string" || !CLUSTER_NAME.test(cluster)) {
    throw new BadOptionError("cluster", `cluster names use letters, digits, '-' and '_', got ${JSON.stringify(cluster)}`);
  }
}

export interface JetStreamLocation {
  /** The server URL, credentials included, without the cluster path. */
  servers: string;
  cluster: string;
}

/** True for `nats://...` and `tls://...` locations (anything else is a file path). */
export function isJetStreamLocation(location: string): boolean {
  return /^(nats|tls):\/\//i.test(location);
}

/** Splits `nats://host:port/<cluster>` into the server URL and the cluster. */
export function parseJetStreamLocation(location: string): JetStreamLocation {
  const match = /^((?:nats|tls):\/\/[^/]+)\/([^/?#]+)\/?$/i.exec(location);
  if (match === null) {
    throw new BadOptionError("log", `a JetStream log is named nats://host:port/<cluster> (or tls://...), got ${JSON.stringify(redactUrls(location))}`);
  }
  checkCluster(match[2]!);
  return { servers: match[1]!, cluster: match[2]! };
}

/** The location of `cluster`'s log on the server `url` (credentials left out: locations are printed). */
export function formatJetStreamLocation(url: string, cluster: string): string {
  const hostPort = url.replace(/^[a-z]+:\/\//i, "").replace(/^[^@/]*@/, "").replace(/\/.*$/, "");
  const scheme = /^tls:\/\//i.test(url) ? "tls" : "nats";
  return `${scheme}://${hostPort}/${cluster}`;
}
