/**
 * A live cluster on NATS: its event log in JetStream followed as its actors append to it
 * (an ordered consumer that, unlike the log reader, does not stop at the stream's end),
 * folded into a live dashboard model.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { BadOptionError } from "../../machines/errors.js";
import { JetStreamLogDecoder } from "../../log/jetstream-decoder.js";
import { orderedLogConsumer } from "../../log/jetstream-elections.js";
import { actorOfSubject, logRecordsSubject, logStreamName, MSG_ID_HEADER, PART_HEADER } from "../../log/jetstream-layout.js";
import { storedMessages } from "../../log/jetstream-reader.js";
import { findLogStream, logStreamManager } from "../../log/jetstream-stream.js";
import type { LogRecord } from "../../log/types.js";
import { connectNats, type NatsConnectOptions } from "../../transport/nats-connect.js";
import { DashboardModel } from "./model.js";

const TELL_MS = 100;

export interface LiveNats {
  model: DashboardModel;
  stop(): Promise<void>;
}

export async function followNatsCluster(cluster: string, connect: NatsConnectOptions): Promise<LiveNats> {
  const nc: NatsConnection = await connectNats({ name: `natsched-dashboard-${cluster}`, ...connect });
  try {
    const jsm = await logStreamManager(nc);
    if ((await findLogStream(jsm, cluster)) === null) throw new BadOptionError("cluster", `no event log of cluster ${cluster} in JetStream on ${nc.getServer()} (its scheduler and workers log there with --log jetstream)`);
    const model = new DashboardModel({ kind: "nats", location: `nats://${nc.getServer()}/${cluster}`, cluster, live: true });
    const subject = logRecordsSubject(cluster);
    const { deleted } = await storedMessages(jsm, cluster, subject);
    const decoder = new JetStreamLogDecoder(deleted);
    const consumer = await orderedLogConsumer(nc, logStreamName(cluster), subject);
    const messages = await consumer.consume();
    let news = false;
    const tell = setInterval(() => {
      if (news) model.changed();
      news = false;
    }, TELL_MS);
    const batch: LogRecord[] = [];
    const reading = (async () => {
      for await (const m of messages) {
        const actor = actorOfSubject(cluster, m.subject);
        if (actor === undefined) continue;
        decoder.message(actor, { subject: m.subject, streamSeq: m.seq, body: m.data, msgId: m.headers?.get(MSG_ID_HEADER) || undefined, part: m.headers?.get(PART_HEADER) || undefined }, batch);
        for (const record of batch) model.add(record);
        news ||= batch.length > 0;
        batch.length = 0;
      }
    })();
    return {
      model,
      stop: async () => {
        clearInterval(tell);
        messages.stop();
        await reading.catch(() => undefined);
        await nc.close().catch(() => undefined);
      },
    };
  } catch (error) {
    await nc.close().catch(() => undefined);
    throw error;
  }
}
