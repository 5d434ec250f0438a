/** Command-line flags every NATS command shares: where the server is, how to log in, which cluster. */
import type { ParseArgsConfig } from "node:util";
import type { NatsConnectOptions } from "../transport/nats-connect.js";

/** How to log in to NATS: what the log tools take too (their log location names the server and cluster). */
export const NATS_AUTH_FLAGS = {
  creds: { type: "string" },
  nkey: { type: "string" },
  user: { type: "string" },
  password: { type: "string" },
  token: { type: "string" },
  tls: { type: "boolean" },
  "tls-ca": { type: "string" },
  "tls-cert": { type: "string" },
  "tls-key": { type: "string" },
  "inbox-prefix": { type: "string" },
} as const satisfies ParseArgsConfig["options"];

export const NATS_FLAGS = {
  nats: { type: "string", short: "s" },
  cluster: { type: "string", short: "c" },
  ...NATS_AUTH_FLAGS,
} as const satisfies ParseArgsConfig["options"];

export const NATS_AUTH_USAGE = `  --creds <file>           credentials file (JWT + nkey seed)       [$NATS_CREDS]
  --nkey <seed|file>       nkey seed, or a file holding one          [$NATS_NKEY]
  --user <u> --password <p>                                          [$NATS_USER, $NATS_PASSWORD]
  --token <t>                                                        [$NATS_TOKEN]
  --tls                    require TLS
  --tls-ca <file> --tls-cert <file> --tls-key <file>                 [$NATS_CA, $NATS_CERT, $NATS_KEY]
  --inbox-prefix <p>       prefix of this connection's reply subjects (default _INBOX), as the
                           user's permissions allow it (docs/nats-roles.conf)
  Credentials may also be written in the URL (nats://user:pass@host:port, nats://token@host:port);
  these flags win over them, and both over the environment. A password, token or seed on the
  command line shows in \`ps\` (the command warns): prefer the environment or a --creds file.`;

export const NATS_FLAGS_USAGE = `NATS options:
  -s, --nats <url>         server URL(s), comma-separated (default: $NATS_URL, else nats://127.0.0.1:4222)
  -c, --cluster <name>     cluster name (default: $NATSCHED_CLUSTER, else "default")
${NATS_AUTH_USAGE}`;

/** For the log tools: how to log in to the server of a nats://host:port/<cluster> log. */
export const LOG_NATS_USAGE = `NATS options (for a log in JetStream, nats://[user:pass@]host:port/<cluster>):
${NATS_AUTH_USAGE}`;

type NatsFlagValues = { [K in keyof typeof NATS_FLAGS]?: (typeof NATS_FLAGS)[K]["type"] extends "boolean" ? boolean : string | undefined };

export function natsOptions(values: NatsFlagValues): NatsConnectOptions {
  const out: NatsConnectOptions = {};
  if (values.nats !== undefined) out.servers = values.nats;
  if (values.creds !== undefined) out.creds = values.creds;
  if (values.nkey !== undefined) out.nkey = values.nkey;
  if (values.user !== undefined) out.user = values.user;
  if (values.password !== undefined) out.pass = values.password;
  if (values.token !== undefined) out.token = values.token;
  if (values["inbox-prefix"] !== undefined) out.inboxPrefix = values["inbox-prefix"];
  const files = { caFile: values["tls-ca"], certFile: values["tls-cert"], keyFile: values["tls-key"] };
  const anyFile = Object.values(files).some((f) => f !== undefined);
  if (anyFile) out.tls = Object.fromEntries(Object.entries(files).filter(([, v]) => v !== undefined));
  else if (values.tls) out.tls = true;
  return out;
}

export function clusterName(values: { cluster?: string | undefined }): string {
  return values.cluster ?? process.env.NATSCHED_CLUSTER ?? "default";
}
