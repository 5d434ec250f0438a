/**
 * Secrets written on the command line (`--password`, `--token`, an nkey seed, a password or
 * token in a URL) show in `ps` to every user of the host, and stay in the shell's history.
 * The commands take them anyway, and warn.
 */
import { redactUrls } from "../transport/url-credentials.js";

const URL_USERINFO = /\b[a-z][a-z0-9+.-]*:\/\/([^\s@/?#]+)@[^\s,]*/gi;
const NKEY_SEED = /^S[A-Z][A-Z2-7]{50,}$/;

/** What in `args` is a secret, described without it ("--password", "a password in nats://alice:***@host:4222"). */
export function secretsInArgs(args: readonly string[]): string[] {
  const found = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const flag = /^--(password|token|nkey)(?:=(.*))?$/s.exec(arg);
    if (flag !== null) {
      const value = flag[2] ?? args[i + 1] ?? "";
      if (flag[1] !== "nkey") found.add(`--${flag[1]}`);
      else if (NKEY_SEED.test(value.trim())) found.add("an nkey seed given to --nkey");
      if (flag[2] === undefined) i++;
      continue;
    }
    for (const match of arg.matchAll(URL_USERINFO)) {
      found.add(`${match[1]!.includes(":") ? "a password" : "a token"} in ${redactUrls(match[0])}`);
    }
  }
  return [...found];
}

/** The warning for `found` (non-empty), naming the safer ways to give each. */
export function secretArgsWarning(found: readonly string[]): string {
  return (
    `${found.join(", ")} on the command line: it shows in \`ps\` to every user of this host and stays in the shell's history. ` +
    `Give it in the environment instead (NATS_PASSWORD with NATS_USER, NATS_TOKEN, NATS_NKEY), or in a file: ` +
    `a credentials file (--creds <file> or NATS_CREDS), an nkey seed file (--nkey <file>)`
  );
}
