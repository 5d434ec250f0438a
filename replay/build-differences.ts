/**
 * What differs between the build that wrote a log (its header's meta) and the build replaying
 * it. Replay re-runs the cores, not the task functions, so a difference never fails a replay:
 * it is a warning that explains, say, a divergence after an upgrade (docs/replay.md).
 */
import { combinedHash } from "../log/code-hash.js";
import type { LogRecord } from "../log/types.js";
import { packageCommit, packageVersion } from "../log/package-version.js";

export interface BuildDifference {
  /** "natsched" (version), "commit", "node" (major version), "function" (a task function's code hash), "functions" (the one digest of many). */
  what: "natsched" | "commit" | "node" | "function" | "functions";
  /** The function's name, for "function". */
  name?: string;
  /** The actor whose start record names the build, when not the log's header (a worker writing to a shared JetStream log). */
  actor?: string;
  /** As the log records it. */
  recorded: string;
  /** As the replaying build has it (undefined: a function the replayer was not given). */
  replaying: string | undefined;
}

/** The replaying build: this process, with the code hashes of the functions the caller gave. */
export interface ReplayingBuild {
  natsched: string;
  commit?: string;
  node: string;
  functions?: Readonly<Record<string, string>>;
}

export function thisBuild(functions?: Readonly<Record<string, string>>): ReplayingBuild {
  const commit = packageCommit();
  return { natsched: packageVersion(), ...(commit !== undefined ? { commit } : {}), node: process.version, ...(functions !== undefined ? { functions } : {}) };
}

/**
 * The differences, from what both sides say: a field the log does not record (an older log) or
 * the replayer does not know (an installed package has no commit) is no difference. Node
 * counts by major version. Functions are compared only when the replayer gave its own.
 */
export function buildDifferences(meta: Readonly<Record<string, unknown>>, now: ReplayingBuild): BuildDifference[] {
  const out: BuildDifference[] = [];
  if (typeof meta.natsched === "string" && meta.natsched !== now.natsched) out.push({ what: "natsched", recorded: meta.natsched, replaying: now.natsched });
  if (typeof meta.commit === "string" && now.commit !== undefined && meta.commit !== now.commit) out.push({ what: "commit", recorded: meta.commit, replaying: now.commit });
  if (typeof meta.node === "string" && nodeMajor(meta.node) !== nodeMajor(now.node)) out.push({ what: "node", recorded: meta.node, replaying: now.node });
  if (now.functions === undefined) return out;
  const listed = meta.functions;
  if (typeof listed === "object" && listed !== null) {
    for (const [name, hash] of Object.entries(listed as Record<string, unknown>)) {
      if (typeof hash === "string" && now.functions[name] !== hash) out.push({ what: "function", name, recorded: hash, replaying: now.functions[name] });
    }
  }
  const digest = meta.functionsDigest as { combined?: unknown } | undefined;
  if (typeof digest?.combined === "string") {
    const mine = combinedHash(now.functions);
    if (mine !== digest.combined) out.push({ what: "functions", recorded: digest.combined, replaying: mine });
  }
  return out;
}

/**
 * The differences of the builds named in workers' start records (`init.build`: workers
 * writing to a cluster's JetStream log, whose header names only its creator's build), each
 * with its actor.
 */
export function startRecordDifferences(records: Iterable<LogRecord>, now: ReplayingBuild): BuildDifference[] {
  const out: BuildDifference[] = [];
  const seen = new Set<string>();
  for (const r of records) {
    if (r.kind !== "start" || typeof r.init.build !== "object" || r.init.build === null) continue;
    for (const d of buildDifferences(r.init.build as Record<string, unknown>, now)) {
      const id = `${r.actor}\t${d.what}\t${d.name ?? ""}\t${d.recorded}`;
      if (seen.has(id)) continue;
      seen.add(id);
      out.push({ ...d, actor: r.actor });
    }
  }
  return out;
}

/** One line for people: "the log was written by another build: natsched 0.3.0 (replaying: 0.4.0); ...". */
export function formatBuildDifferences(differences: readonly BuildDifference[]): string {
  const parts = differences.map((d) => {
    const what = d.what === "function" ? `function ${d.name}` : d.what === "functions" ? "functions (one digest of all)" : d.what;
    const label = d.actor === undefined ? what : `${d.actor}: ${what}`;
    return `${label} ${d.recorded} (replaying: ${d.replaying ?? "not given"})`;
  });
  return `warning: the log was written by another build: ${parts.join("; ")}. Replay checks the cores, not the task functions: this is not a failure.`;
}

function nodeMajor(version: string): string {
  return /^v?(\d+)/.exec(version)?.[1] ?? version;
}
