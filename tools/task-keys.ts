import type { LogReader } from "../log/reader.js";

/** Every task key the scheduler's records name (its task transitions and the graphs it was given). */
export async function taskKeys(reader: LogReader): Promise<Set<string>> {
  const keys = new Set<string>();
  for await (const record of reader.records({ actor: "scheduler", kinds: ["transition", "input"] })) {
    if (record.kind === "transition") {
      if (record.machine === "task") keys.add(record.id);
    } else if (record.kind === "input" && Array.isArray(record.event.tasks)) {
      for (const spec of record.event.tasks as { key?: unknown }[]) if (typeof spec?.key === "string") keys.add(spec.key);
    }
  }
  return keys;
}
