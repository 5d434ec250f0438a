/**
 * Opens a NATS connection from natsched's options and the environment. The NATS JS client
 * reads no environment variables itself; these follow the `nats` CLI's names. Nor does it
 * read credentials written into a server URL (`nats://alice:s3cret@host:4222`,
 * `nats://token@host:4222`): natsched takes them out of the URL and passes them as options.
 * Precedence: explicit options > credentials in the URL > NATS_USER/NATS_PASSWORD/NATS_TOKEN.
 */
import { readFileSync } from "node:fs";
import {
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  type Authenticator,
  type NatsConnection,
  type NodeConnectionOptions,
} from "@nats-io/transport-node";
import { BadOptionError, NatschedError } from "../machines/errors.js";
import { redactUrls, splitUrlCredentials, type UrlCredentials } from "./url-credentials.js";

export { redactUrls, splitUrlCredentials, type UrlCredentials };

export interface NatsTlsOptions {
  /** CA certificate(s) to trust, PEM file. */
  caFile?: string;
  /** Client certificate for mutual TLS, PEM file. */
  certFile?: string;
  keyFile?: string;
}

export interface NatsConnectOptions {
  /** Server URL(s); a string may list several separated by commas. Default: NATS_URL, else nats://127.0.0.1:4222. */
  servers?: string | string[];
  /** Connection name shown by the server's monitoring. */
  name?: string;
  /** A `.creds` file (JWT + nkey seed), as `nsc` writes. Env NATS_CREDS. */
  creds?: string;
  /** An nkey seed (`SU...`) or a file holding one. Env NATS_NKEY. */
  nkey?: string;
  /** Env NATS_USER / NATS_PASSWORD. */
  user?: string;
  pass?: string;
  /** Env NATS_TOKEN. */
  token?: string;
  /** TLS: `true` requires TLS with the system CAs; env NATS_CA, NATS_CERT, NATS_KEY. */
  tls?: NatsTlsOptions | boolean;
  /** Milliseconds between reconnect attempts (retried forever). Default 1000. */
  reconnectTimeWait?: number;
  /** Keep retrying the first connection until a server answers, instead of failing. Default false. */
  waitForServer?: boolean;
  /** Milliseconds to wait for the connection handshake. Default 10000. */
  timeout?: number;
  /**
   * Prefix of this connection's reply subjects (requests, JetStream's replies and consumers);
   * default "_INBOX". With role permissions each user gets its own (docs/nats-roles.conf), so
   * no other user can read the replies it gets.
   */
  inboxPrefix?: string;
  /** Where to read NATS_* variables; default process.env. */
  env?: NodeJS.ProcessEnv;
}

export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";

/**
 * Rejects with a NatschedError (code PROTOCOL; the nats.js error as `cause`) when no server
 * takes the connection. Its message names the servers without their credentials.
 */
export async function connectNats(opts: NatsConnectOptions = {}): Promise<NatsConnection> {
  const options = natsConnectionOptions(opts);
  try {
    return await connect(options);
  } catch (error) {
    const servers = ([] as string[]).concat(options.servers ?? []).join(", ");
    throw new NatschedError("PROTOCOL", redactUrls(`cannot connect to NATS at ${servers}: ${(error as Error)?.message ?? String(error)}`), { cause: error });
  }
}

/** The nats.js options natsched's options and the environment amount to. */
export function natsConnectionOptions(opts: NatsConnectOptions = {}): NodeConnectionOptions {
  const env = opts.env ?? process.env;
  const { servers, credentials: fromUrl } = splitServerCredentials(serverList(opts.servers ?? env.NATS_URL ?? DEFAULT_NATS_URL));
  const out: NodeConnectionOptions = {
    servers,
    maxReconnectAttempts: -1,
    reconnectTimeWait: positive("reconnectTimeWait", opts.reconnectTimeWait ?? 1000),
    reconnectJitter: 100,
    waitOnFirstConnect: opts.waitForServer ?? false,
    timeout: positive("timeout", opts.timeout ?? 10_000),
    pingInterval: 20_000,
  };
  if (opts.name !== undefined) out.name = opts.name;
  if (opts.inboxPrefix !== undefined) out.inboxPrefix = inboxPrefix(opts.inboxPrefix);
  const authenticators: Authenticator[] = [];
  const creds = opts.creds ?? env.NATS_CREDS;
  if (creds) authenticators.push(credsAuthenticator(readFile("creds", creds)));
  const nkey = opts.nkey ?? env.NATS_NKEY;
  if (nkey) authenticators.push(nkeyAuthenticator(nkeySeed(nkey)));
  if (authenticators.length > 0) out.authenticator = authenticators;
  // Explicit options win over credentials in a URL, which win over the environment's.
  const explicit = opts.user !== undefined || opts.pass !== undefined || opts.token !== undefined || opts.creds !== undefined || opts.nkey !== undefined;
  if (!explicit && fromUrl !== undefined) {
    if (fromUrl.token !== undefined) out.token = fromUrl.token;
    else {
      out.user = fromUrl.user!;
      out.pass = fromUrl.pass!;
    }
  } else {
    const user = opts.user ?? env.NATS_USER;
    if (user) {
      out.user = user;
      const pass = opts.pass ?? env.NATS_PASSWORD;
      if (pass !== undefined) out.pass = pass;
    }
    const token = opts.token ?? env.NATS_TOKEN;
    if (token) out.token = token;
  }
  const tls = tlsOptions(opts.tls, env);
  if (tls !== undefined) out.tls = tls;
  return out;
}

/** The servers without credentials, and the credentials they carried (one set: servers that disagree are refused). */
function splitServerCredentials(list: string[]): { servers: string[]; credentials?: UrlCredentials } {
  const servers: string[] = [];
  let credentials: UrlCredentials | undefined;
  for (const entry of list) {
    const split = splitUrlCredentials(entry);
    servers.push(split.url);
    if (split.credentials === undefined) continue;
    if (credentials !== undefined && JSON.stringify(credentials) !== JSON.stringify(split.credentials)) {
      throw new BadOptionError("servers", `the server URLs carry different credentials (${redactUrls(list.join(", "))}): one connection logs in one way; give them once, or with --user/--password/--token`);
    }
    credentials = split.credentials;
  }
  return credentials === undefined ? { servers } : { servers, credentials };
}

function serverList(servers: string | string[]): string[] {
  const list = (Array.isArray(servers) ? servers : servers.split(",")).map((s) => s.trim()).filter((s) => s.length > 0);
  if (list.length === 0) throw new BadOptionError("servers", "no NATS server URL given");
  return list;
}

function tlsOptions(tls: NatsTlsOptions | boolean | undefined, env: NodeJS.ProcessEnv): NodeConnectionOptions["tls"] | undefined {
  const files: NatsTlsOptions = typeof tls === "object" ? { ...tls } : {};
  files.caFile ??= env.NATS_CA || undefined;
  files.certFile ??= env.NATS_CERT || undefined;
  files.keyFile ??= env.NATS_KEY || undefined;
  const anyFile = files.caFile !== undefined || files.certFile !== undefined || files.keyFile !== undefined;
  if (tls === false) return undefined;
  if (tls === undefined && !anyFile) return undefined;
  if ((files.certFile === undefined) !== (files.keyFile === undefined)) {
    throw new BadOptionError("tls", "certFile and keyFile go together (a client certificate needs its key)");
  }
  const out: NonNullable<NodeConnectionOptions["tls"]> = {};
  if (files.caFile !== undefined) out.caFile = files.caFile;
  if (files.certFile !== undefined) out.certFile = files.certFile;
  if (files.keyFile !== undefined) out.keyFile = files.keyFile;
  return out;
}

function nkeySeed(value: string): Uint8Array {
  const text = /^S[A-Z][A-Z2-7]{50,}$/.test(value.trim()) ? value.trim() : new TextDecoder().decode(readFile("nkey", value)).trim();
  // A seed file may hold comments or a public key line too; the seed is the line starting with S.
  const seed = text.split(/\s+/).find((line) => /^S[A-Z][A-Z2-7]{50,}$/.test(line));
  if (seed === undefined) throw new BadOptionError("nkey", "no nkey seed (a line starting with S) found");
  return new TextEncoder().encode(seed);
}

function readFile(option: string, path: string): Uint8Array {
  try {
    return new Uint8Array(readFileSync(path));
  } catch (error) {
    throw new BadOptionError(option, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** One or more subject tokens without wildcards: what `createInbox` will put `.<id>` after. */
function inboxPrefix(value: string): string {
  if (typeof value !== "string" || !/^[^.*>\s]+(\.[^.*>\s]+)*$/.test(value)) {
    throw new BadOptionError("inboxPrefix", `must be subject tokens without wildcards or spaces, e.g. _INBOX_w1, got ${JSON.stringify(value)}`);
  }
  return value;
}

function positive(option: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0)) throw new BadOptionError(option, `must be a positive number of milliseconds, got ${String(value)}`);
  return value;
}
