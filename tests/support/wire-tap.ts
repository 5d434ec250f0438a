/**
 * Listens to everything a natsched cluster says on a NATS server: every message on
 * `natsched.<cluster>.>` and every reply on `_INBOX.>`, each labelled with the schema
 * (docs/schemas/<kind>.schema.json) its body should match. A reply is matched to its request
 * by the request's reply subject (one server: the request reaches the tap first).
 */
import { connect, type Msg, type NatsConnection } from "@nats-io/transport-node";

export interface Tapped {
  subject: string;
  /** Schema name for the body; "chunk" and "v8" for raw bytes no schema describes. */
  kind: string;
  /** The decoded JSON body, undefined for raw bytes. */
  body: unknown;
  /** The body's text as sent, for JSON bodies. */
  text?: string;
}

const BYTES_HEADER = "Natsched-Encoding";
const FRAGMENT_HEADER = "Natsched-Frag";

export class WireTap {
  readonly messages: Tapped[] = [];
  /** Anything the tap could not place: fragments, replies to unknown requests, undecodable bodies. */
  readonly strays: string[] = [];
  private readonly requests = new Map<string, { kind: string; body: unknown }>();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly cluster: string,
  ) {}

  static async start(servers: string, cluster: string): Promise<WireTap> {
    const tap = new WireTap(await connect({ servers, name: "wire-tap" }), cluster);
    tap.nc.subscribe(`natsched.${cluster}.>`, { callback: (error, msg) => void (error === null && tap.take(msg)) });
    tap.nc.subscribe("_INBOX.>", { callback: (error, msg) => void (error === null && tap.take(msg)) });
    await tap.nc.flush();
    return tap;
  }

  async close(): Promise<void> {
    await this.nc.flush();
    await this.nc.close();
  }

  private take(msg: Msg): void {
    if (msg.headers?.get(FRAGMENT_HEADER)) {
      this.strays.push(`fragment on ${msg.subject}: the run should stay below max_payload`);
      return;
    }
    if (msg.headers?.code === 503) return; // "no responders": a status from the server, no body
    const kind = this.kindOf(msg.subject);
    if (kind === undefined) return;
    const binary = msg.headers?.get(BYTES_HEADER) === "bytes";
    let body: unknown;
    let text: string | undefined;
    if (binary && !(kind === "data-reply" && this.isJsonReply(msg.subject))) {
      this.messages.push({ subject: msg.subject, kind: kind === "data-reply" ? this.binaryKind(msg.subject) : kind, body: undefined });
      return;
    }
    try {
      text = new TextDecoder().decode(msg.data);
      body = JSON.parse(text);
    } catch {
      this.strays.push(`undecodable body on ${msg.subject}`);
      return;
    }
    if (msg.reply) this.requests.set(msg.reply, { kind, body });
    this.messages.push({ subject: msg.subject, kind, body, text });
  }

  private kindOf(subject: string): string | undefined {
    if (subject.startsWith("_INBOX.")) {
      const request = this.requests.get(subject);
      if (request === undefined) {
        this.strays.push(`reply on ${subject} to no request the tap saw`);
        return undefined;
      }
      return `${request.kind}-reply`;
    }
    const rest = subject.slice(`natsched.${this.cluster}.`.length).split(".");
    if (rest[0] === "scheduler" || rest[0] === "query" || rest[0] === "worker") return rest[0];
    if (rest[0] === "data" || (rest[0] === "client" && rest[2] === "data")) return "data";
    if (rest[0] === "client") return "client";
    if (rest[0] === "announce") return "announce";
    if (rest[0] === "status") return undefined; // NATS service endpoints: monitoring, not the protocol
    this.strays.push(`unknown natsched subject ${subject}`);
    return undefined;
  }

  /** A get-data answered in JSON is JSON text sent as bytes; everything else binary is opaque. */
  private isJsonReply(replySubject: string): boolean {
    const request = this.requests.get(replySubject)?.body as { op?: string; encoding?: string } | undefined;
    return request?.op === "get-data" && request.encoding !== "v8";
  }

  private binaryKind(replySubject: string): string {
    const request = this.requests.get(replySubject)?.body as { op?: string } | undefined;
    return request?.op === "get-chunk" ? "chunk" : "v8";
  }
}
