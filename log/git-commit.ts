import { readFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";

const SHA = /^[0-9a-f]{40}$|^[0-9a-f]{64}$/;

/**
 * The commit checked out in the git work tree at `dir`, read from its files (HEAD, loose refs,
 * packed-refs) rather than by running git: undefined when `dir` is no work tree (an installed
 * package) or the files say nothing certain. A linked worktree's `.git` is a file naming its
 * git directory, whose refs live in the common directory.
 */
export function gitCommitAt(dir: string): string | undefined {
  const gitDir = gitDirOf(dir);
  if (gitDir === undefined) return undefined;
  const head = read(join(gitDir, "HEAD"))?.trim();
  if (head === undefined) return undefined;
  if (SHA.test(head)) return head;
  const ref = /^ref: (\S+)$/.exec(head)?.[1];
  if (ref === undefined) return undefined;
  const common = commonDirOf(gitDir);
  for (const base of common === gitDir ? [gitDir] : [gitDir, common]) {
    const loose = read(join(base, ref))?.trim();
    if (loose !== undefined && SHA.test(loose)) return loose;
  }
  return packedRef(common, ref);
}

function gitDirOf(dir: string): string | undefined {
  const dotGit = join(dir, ".git");
  if (read(join(dotGit, "HEAD")) !== undefined) return dotGit;
  const pointer = /^gitdir: (.+)$/m.exec(read(dotGit) ?? "")?.[1]?.trim();
  if (pointer === undefined) return undefined;
  return isAbsolute(pointer) ? pointer : resolve(dir, pointer);
}

function commonDirOf(gitDir: string): string {
  const common = read(join(gitDir, "commondir"))?.trim();
  if (common === undefined || common === "") return gitDir;
  return isAbsolute(common) ? common : resolve(gitDir, common);
}

function packedRef(gitDir: string, ref: string): string | undefined {
  for (const line of (read(join(gitDir, "packed-refs")) ?? "").split("\n")) {
    const [sha, name] = line.split(" ");
    if (name === ref && sha !== undefined && SHA.test(sha)) return sha;
  }
  return undefined;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}
