import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { codeHash, functionsMeta } from "../log/code-hash.js";
import { resolveFunctions, type FunctionsOption, type ResolvedFunctions } from "./function-modules.js";

/**
 * A code hash per task function: of its module file's bytes for a module function (what the
 * executor threads load), of its source text (`fn.toString()`) for one given as an object.
 * A module that cannot be read again hashes its functions' source text instead.
 */
export function functionHashes(resolved: ResolvedFunctions): Record<string, string> {
  const byModule = new Map<string, string | undefined>();
  const out: Record<string, string> = {};
  for (const [name, fn] of Object.entries(resolved.functions)) {
    const url = resolved.modules.get(name)?.url;
    let hash = url === undefined ? undefined : byModule.get(url);
    if (url !== undefined && !byModule.has(url)) {
      hash = moduleHash(url);
      byModule.set(url, hash);
    }
    out[name] = hash ?? codeHash(fn.toString());
  }
  return out;
}

/** The header meta of these functions (log/code-hash.ts: a map, or one digest past 1,000). */
export function functionsHeaderMeta(resolved: ResolvedFunctions): Record<string, unknown> {
  return functionsMeta(functionHashes(resolved));
}

/** `functionHashes` of a functions option, as `replay`'s `functions` takes them (a replayer's own functions). */
export async function hashFunctions(option: FunctionsOption, cwd?: string): Promise<Record<string, string>> {
  return functionHashes(await resolveFunctions(option, cwd));
}

function moduleHash(url: string): string | undefined {
  try {
    return codeHash(readFileSync(fileURLToPath(url)));
  } catch {
    return undefined;
  }
}
