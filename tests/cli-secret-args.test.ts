/**
 * A password, token or nkey seed on the command line shows in `ps`: every command takes it,
 * and warns, pointing to NATS_PASSWORD, NATS_TOKEN and credentials files.
 */
import { describe, expect, it } from "vitest";
import { runCli } from "../cli/run.js";
import { secretsInArgs } from "../cli/secret-args.js";

const SEED = "SUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU";
/** Nothing listens on port 1: the commands fail at once, after their warning. */
const NOWHERE = "127.0.0.1:1";

async function run(argv: string[]): Promise<{ code: number; err: string }> {
  const err: string[] = [];
  const code = await runCli(argv, { out: () => undefined, err: (t) => err.push(t) });
  return { code, err: err.join("\n") };
}

describe("secrets on the command line", () => {
  it("are found in --password, --token, an nkey seed and URLs, and described without them", () => {
    expect(secretsInArgs(["--user", "alice", "--password", "s3cret"])).toEqual(["--password"]);
    expect(secretsInArgs(["--token=tok-123"])).toEqual(["--token"]);
    expect(secretsInArgs(["--nkey", SEED])).toEqual(["an nkey seed given to --nkey"]);
    expect(secretsInArgs(["--nkey", "/etc/natsched/user.nk"])).toEqual([]);
    expect(secretsInArgs(["-s", "nats://alice:s3cret@h1:4222,nats://alice:s3cret@h2:4222"])).toEqual([
      "a password in nats://alice:***@h1:4222",
      "a password in nats://alice:***@h2:4222",
    ]);
    expect(secretsInArgs(["--nats=tls://tok-123@h:4222"])).toEqual(["a token in tls://***@h:4222"]);
    expect(secretsInArgs(["nats://alice:s3cret@h:4222/prod"])).toEqual(["a password in nats://alice:***@h:4222/prod"]);
    expect(secretsInArgs(["--nats", "nats://h1:4222,nats://h2:4222", "--creds", "/etc/user.creds", "--user", "alice"])).toEqual([]);
  });

  it("make every command warn on stderr, naming NATS_PASSWORD, NATS_TOKEN and --creds, and never the secret", async () => {
    for (const argv of [
      ["status", "--nats", `nats://alice:s3cret@${NOWHERE}`],
      ["status", "--nats", `nats://${NOWHERE}`, "--user", "alice", "--password", "s3cret"],
      ["worker", "--nats", `nats://${NOWHERE}`, "--token", "s3cret"],
      ["log", `nats://s3cret@${NOWHERE}/prod`],
    ]) {
      const { err } = await run(argv);
      const warning = err.split("\n").find((line) => line.includes("warning:")) ?? "";
      expect(warning, err).toMatch(new RegExp(`^natsched ${argv[0]}: warning: .* on the command line: it shows in \`ps\``));
      expect(warning).toMatch(/NATS_PASSWORD/);
      expect(warning).toMatch(/NATS_TOKEN/);
      expect(warning).toMatch(/--creds <file>/);
      expect(err).not.toContain("s3cret");
    }
  });

  it("no warning when the secret comes from the environment or a file", async () => {
    const { err } = await run(["status", "--nats", `nats://${NOWHERE}`, "--creds", "/nonexistent.creds"]);
    expect(err).not.toMatch(/warning/);
  });
});
