/**
 * Top functions by self time in a V8 CPU profile (`node --cpu-prof`):
 *   npx tsx bench/profile-top.ts <file.cpuprofile> [N]
 * `npm run bench -- --profile` writes one profile per benchmark case and prints this summary.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface TopEntry {
  fn: string;
  where: string;
  selfMs: number;
  percent: number;
}

function shortUrl(url: string): string {
  if (url === "") return "";
  let path = url;
  if (url.startsWith("file://")) {
    try {
      path = fileURLToPath(url);
    } catch {
      /* keep as is */
    }
  }
  const rel = relative(process.cwd(), path);
  return rel.startsWith("..") ? path : rel;
}

/** Self time per function (name + file + line), largest first. */
export function topSelfTime(file: string, n = 10): { totalMs: number; top: TopEntry[]; files: { file: string; selfMs: number; percent: number }[] } {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, { fn: string; where: string; us: number }>();
  const perFile = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    const cf = byId.get(id)?.callFrame;
    if (cf === undefined) return;
    const fn = cf.functionName || "(anonymous)";
    const where = cf.url ? `${shortUrl(cf.url)}:${cf.lineNumber + 1}` : "";
    const fileKey = cf.url ? shortUrl(cf.url) : fn;
    perFile.set(fileKey, (perFile.get(fileKey) ?? 0) + dt);
    const k = `${fn}@${where}`;
    const entry = self.get(k) ?? { fn, where, us: 0 };
    entry.us += dt;
    self.set(k, entry);
  });
  const top = [...self.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, n)
    .map((e) => ({ fn: e.fn, where: e.where, selfMs: Math.round(e.us / 1000), percent: Number(((100 * e.us) / Math.max(total, 1)).toFixed(1)) }));
  const files = [...perFile]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([f, us]) => ({ file: f, selfMs: Math.round(us / 1000), percent: Number(((100 * us) / Math.max(total, 1)).toFixed(1)) }));
  return { totalMs: Math.round(total / 1000), top, files };
}

export function formatTop(file: string, result: ReturnType<typeof topSelfTime>): string {
  const lines = [`${file} (${result.totalMs} ms sampled)`, "  self ms      %  function (file:line)"];
  for (const e of result.top) lines.push(`  ${String(e.selfMs).padStart(7)} ${e.percent.toFixed(1).padStart(6)}  ${e.fn}${e.where ? ` (${e.where})` : ""}`);
  lines.push("  by file:");
  for (const e of result.files) lines.push(`  ${String(e.selfMs).padStart(7)} ${e.percent.toFixed(1).padStart(6)}  ${e.file}`);
  return lines.join("\n");
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const file = process.argv[2];
  if (file === undefined) {
    process.stderr.write("usage: npx tsx bench/profile-top.ts <file.cpuprofile> [N]\n");
    process.exit(2);
  }
  console.log(formatTop(file, topSelfTime(file, Number(process.argv[3] ?? 10))));
}
