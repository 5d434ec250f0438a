/** A Client of a cluster running on NATS: `connectClient({ servers, cluster })`. */
import { NatsTransport, type NatsTransportOptions } from "../../transport/nats.js";
import type { NatsConnectOptions } from "../../transport/nats-connect.js";
import type { LogFileFormat } from "../../log/file-log.js";
import type { LogSink } from "../../log/types.js";
import { checkClientId, Client, randomClientId } from "../client.js";
import { openClientLog, withoutProbeRefusals, type ClientLogOption } from "./client-log.js";
import { checkClusterName } from "./scheduler-process.js";

export interface ConnectClientOptions extends NatsConnectOptions, Pick<NatsTransportOptions, "resend" | "onError"> {
  cluster: string;
  /** Client id; random by default. */
  id?: string;
  /** Milliseconds to wait for the scheduler to answer a request, retries while none serves included. Default 30000. */
  requestTimeout?: number;
  /** Milliseconds a request may wait for a scheduler that says it is resuming, past requestTimeout (see ClientOptions). Default 300000. */
  resumeWait?: number;
  /**
   * The client's event log (actor client.<id>: its inputs, its futures' transitions): a file
   * path, `{ jetstream: true }` for the cluster's log in JetStream, or false for none.
   * Default: the cluster's JetStream log when it has one (its scheduler runs with
   * `--log jetstream`), else none.
   */
  log?: ClientLogOption;
  /** A log file's format (docs/log-format.md): "binary" (the default) or "jsonl". */
  logFormat?: LogFileFormat;
}

/** A Client that owns its NATS connection and its log: `close()` leaves the cluster, closes its log, then the connection. */
class NatsClient extends Client {
  constructor(
    opts: ConstructorParameters<typeof Client>[0],
    private readonly nats: NatsTransport,
    private readonly logSink: LogSink | null,
  ) {
    super(opts);
  }

  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      // A log in JetStream is written on this connection: closed (flushed) before it.
      await this.logSink?.close().catch(() => undefined);
      await this.nats.close();
    }
  }
}

/** Connect to NATS, join the cluster's scheduler (waiting up to `requestTimeout` for one to serve; TimeoutError if none does), and return the client. */
export async function connectClient(opts: ConnectClientOptions): Promise<Client> {
  checkClusterName(opts.cluster);
  if (opts.id !== undefined) checkClientId(opts.id);
  // Without a `log` option the client asks whether the cluster logs to JetStream; a user not allowed to ask is told no, silently.
  const transport = await NatsTransport.connect({ name: `natsched-client-${opts.cluster}`, ...opts, ...(opts.log === undefined ? { onError: withoutProbeRefusals(opts.cluster, opts.onError) } : {}) });
  // The id names the client's log (client.<id>), which is opened before the client records its start.
  const id = opts.id ?? randomClientId();
  let log: Awaited<ReturnType<typeof openClientLog>>;
  try {
    log = await openClientLog(transport, opts.cluster, id, opts.log, opts.logFormat, opts.onError);
  } catch (error) {
    await transport.close().catch(() => undefined);
    throw error;
  }
  let client: NatsClient;
  try {
    client = new NatsClient(
      {
        cluster: opts.cluster,
        transport,
        id,
        ...(log !== null ? { log: log.sink, logFirstSeq: log.firstSeq } : {}),
        ...(opts.requestTimeout !== undefined ? { requestTimeout: opts.requestTimeout } : {}),
        ...(opts.resumeWait !== undefined ? { resumeWait: opts.resumeWait } : {}),
      },
      transport,
      log?.sink ?? null,
    );
  } catch (error) {
    await log?.sink.close().catch(() => undefined);
    await transport.close().catch(() => undefined);
    throw error;
  }
  try {
    return await client.connect();
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
}
