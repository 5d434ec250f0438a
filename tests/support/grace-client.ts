/**
 * A natsched client as a process of its own, for tests that kill it:
 * `node --import tsx tests/support/grace-client.ts <nats-url> <cluster> <n>` submits n
 * `inc` tasks, waits for them, prints `ready <client-id> <keys…>` and then idles, holding
 * its futures, until it is killed.
 */
import { Client } from "../../actors/client.js";

const [servers, cluster, n] = process.argv.slice(2);
const client = await Client.connect({ servers: servers!, cluster: cluster! });
const futures = client.map<number>("inc", Array.from({ length: Number(n) }, (_, i) => i), { pure: false });
await client.gather(futures);
console.log(`ready ${client.id} ${futures.map((f) => f.key).join(" ")}`);
setInterval(() => undefined, 60_000);
