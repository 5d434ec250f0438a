/** Connection options: NATS_URL and friends, and each kind of authentication against a real server. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nkeys } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { BadOptionError, NatschedError } from "../machines/errors.js";
import { NatsTransport } from "../transport/nats.js";
import { natsOptions } from "../cli/nats-flags.js";
import { connectNats, natsConnectionOptions } from "../transport/nats-connect.js";
import { NatsServer } from "./support/nats-server.js";

const servers: NatsServer[] = [];
const dir = mkdtempSync(join(tmpdir(), "natsched-connect-"));

afterAll(async () => {
  await Promise.all(servers.map((s) => s.dispose()));
  rmSync(dir, { recursive: true, force: true });
});

async function serverWith(config: string): Promise<NatsServer> {
  const server = await NatsServer.start({ config, jetstream: false });
  servers.push(server);
  return server;
}

describe("natsConnectionOptions", () => {
  it("reads NATS_URL (a comma list) and the nats CLI's variables, options winning", () => {
    const env = { NATS_URL: "nats://a:4222, nats://b:4222", NATS_USER: "u", NATS_PASSWORD: "p", NATS_TOKEN: "t" };
    const opts = natsConnectionOptions({ env });
    expect(opts.servers).toEqual(["nats://a:4222", "nats://b:4222"]);
    expect(opts).toMatchObject({ user: "u", pass: "p", token: "t", maxReconnectAttempts: -1 });
    expect(natsConnectionOptions({ env, servers: "nats://c:1", user: "v" })).toMatchObject({ servers: ["nats://c:1"], user: "v" });
    expect(natsConnectionOptions({ env: {} }).servers).toEqual(["nats://127.0.0.1:4222"]);
  });

  it("maps TLS files and checks them", () => {
    expect(natsConnectionOptions({ env: {}, tls: { caFile: "ca.pem" } }).tls).toEqual({ caFile: "ca.pem" });
    expect(natsConnectionOptions({ env: { NATS_CERT: "c.pem", NATS_KEY: "k.pem" } }).tls).toEqual({ certFile: "c.pem", keyFile: "k.pem" });
    expect(natsConnectionOptions({ env: {}, tls: true }).tls).toEqual({});
    expect(natsConnectionOptions({ env: {} }).tls).toBeUndefined();
    expect(() => natsConnectionOptions({ env: {}, tls: { certFile: "c.pem" } })).toThrow(BadOptionError);
  });

  it("takes an inbox prefix (the --inbox-prefix flag) and refuses one that is no subject prefix", () => {
    expect(natsConnectionOptions({ env: {}, inboxPrefix: "_INBOX_prod-w1" }).inboxPrefix).toBe("_INBOX_prod-w1");
    expect(natsConnectionOptions({ ...natsOptions({ "inbox-prefix": "_INBOX_a.b" }), env: {} }).inboxPrefix).toBe("_INBOX_a.b");
    expect(natsConnectionOptions({ env: {} }).inboxPrefix).toBeUndefined();
    for (const bad of ["", "_INBOX.*", "a..b", "has space", "x.>"]) expect(() => natsConnectionOptions({ env: {}, inboxPrefix: bad }), bad).toThrow(/option inboxPrefix/);
  });

  it("refuses unreadable credentials and nkey files by option name", () => {
    expect(() => natsConnectionOptions({ env: {}, creds: join(dir, "missing.creds") })).toThrow(/option creds: cannot read/);
    writeFileSync(join(dir, "not-a-seed"), "hello\n");
    expect(() => natsConnectionOptions({ env: {}, nkey: join(dir, "not-a-seed") })).toThrow(/option nkey: no nkey seed/);
  });
});

describe("authentication against nats-server", () => {
  it("user and password", async () => {
    const server = await serverWith('authorization { user: "alice", password: "s3cret" }\n');
    const t = await NatsTransport.connect({ servers: server.url, user: "alice", pass: "s3cret", env: {} });
    await t.flush();
    await t.close();
    const refused = await connectNats({ servers: server.url, user: "alice", pass: "wrong", env: {} }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(NatschedError);
    expect((refused as Error).message).toMatch(/cannot connect to NATS/);
  });

  it("token, from NATS_TOKEN and NATS_URL", async () => {
    const server = await serverWith('authorization { token: "tok-123" }\n');
    const t = await NatsTransport.connect({ env: { NATS_URL: server.url, NATS_TOKEN: "tok-123" } });
    await t.flush();
    await t.close();
  });

  it("nkey seed, given directly or in a file", async () => {
    const user = nkeys.createUser();
    const seed = new TextDecoder().decode(user.getSeed());
    const server = await serverWith(`authorization { users: [ { nkey: "${user.getPublicKey()}" } ] }\n`);
    const direct = await NatsTransport.connect({ servers: server.url, nkey: seed, env: {} });
    await direct.close();
    const file = join(dir, "user.nk");
    writeFileSync(file, `${seed}\n`);
    const fromFile = await NatsTransport.connect({ servers: server.url, env: { NATS_NKEY: file } });
    await fromFile.close();
  });
});
