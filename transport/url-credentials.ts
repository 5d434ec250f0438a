/**
 * Credentials written into a server URL (`nats://alice:s3cret@host:4222`): split out of it,
 * and redacted from text. Its own module, without the NATS client, so the CLI redacts what it
 * prints without loading NATS (cli/run.ts); transport/nats-connect.ts re-exports it.
 */

/** Credentials written into a server URL: `user:pass@` or `token@`. */
export interface UrlCredentials {
  user?: string;
  pass?: string;
  token?: string;
}

const URL_USERINFO = /^((?:[a-z][a-z0-9+.-]*:\/\/)?)([^@]*)@(.*)$/is;

/**
 * Splits the credentials out of a server URL: `nats://alice:s3cret@host:4222` gives
 * `nats://host:4222` and `{ user: "alice", pass: "s3cret" }`; `nats://tok@host:4222` gives the
 * token `tok` (as the Go client and the `nats` CLI read them). Percent-escapes are decoded.
 */
export function splitUrlCredentials(url: string): { url: string; credentials?: UrlCredentials } {
  const match = URL_USERINFO.exec(url.trim());
  // An "@" after the host (in a path) is no user info.
  if (match === null || /[/?#]/.test(match[2]!)) return { url };
  const [, scheme, userinfo, rest] = match as unknown as [string, string, string, string];
  const colon = userinfo.indexOf(":");
  const credentials: UrlCredentials =
    colon < 0 ? { token: decode(userinfo) } : { user: decode(userinfo.slice(0, colon)), pass: decode(userinfo.slice(colon + 1)) };
  return { url: `${scheme}${rest}`, credentials };
}

/**
 * `text` with the password or token of every URL in it replaced by `***`
 * (`nats://alice:***@host:4222`, `nats://***@host:4222`): for messages and logs.
 */
export function redactUrls(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)([^\s@/?#]+)@/gi, (_all, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(":");
    return colon < 0 ? `${scheme}***@` : `${scheme}${userinfo.slice(0, colon)}:***@`;
  });
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
