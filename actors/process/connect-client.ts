/** A Client of a cluster running on NATS: `connectClient({ servers, cluster })`. */
import { NatsTransport, type NatsTransportOptions } from "../../transport/nats.js";
import type { NatsConnectOptions } from "../../transport/nats-connect.js";
import { Client } from "../client.js";
import { checkClusterName } from "./scheduler-process.js";

export interface ConnectClientOptions extends NatsConnectOptions, Pick<NatsTransportOptions, "resend" | "onError"> {
  cluster: string;
  /** Client id; random by default. */
  id?: string;
  /** Milliseconds to wait for the scheduler to answer a request, retries while none serves included. Default 30000. */
  requestTimeout?: number;
  /** Milliseconds a request may wait for a scheduler that says it is resuming, past requestTimeout (see ClientOptions). Default 300000. */
  resumeWait?: number;
}

/** A Client that owns its NATS connection: `close()` leaves the cluster and closes it. */
class NatsClient extends Client {
  constructor(
    opts: ConstructorParameters<typeof Client>[0],
    private readonly nats: NatsTransport,
  ) {
    super(opts);
  }

  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      await this.nats.close();
    }
  }
}

/** Connect to NATS, join the cluster's scheduler (waiting up to `requestTimeout` for one to serve; TimeoutError if none does), and return the client. */
export async function connectClient(opts: ConnectClientOptions): Promise<Client> {
  checkClusterName(opts.cluster);
  const transport = await NatsTransport.connect({ name: `natsched-client-${opts.cluster}`, ...opts });
  const client = new NatsClient(
    {
      cluster: opts.cluster,
      transport,
      ...(opts.id !== undefined ? { id: opts.id } : {}),
      ...(opts.requestTimeout !== undefined ? { requestTimeout: opts.requestTimeout } : {}),
      ...(opts.resumeWait !== undefined ? { resumeWait: opts.resumeWait } : {}),
    },
    transport,
  );
  try {
    return await client.connect();
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
}
