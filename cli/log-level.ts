/**
 * `--log-level` of the scheduler and worker processes: what they print besides their start
 * and stop lines. `error`: failures only; `warn`: and warnings; `info` (the default): and
 * workers joining and leaving, and a progress line every `--progress-every` seconds while
 * the counts change; `debug`: progress every second.
 */
import { BadOptionError } from "../machines/errors.js";
import type { Io } from "./run.js";

export const LOG_LEVELS = ["error", "warn", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const LOG_LEVEL_FLAGS = {
  "log-level": { type: "string" },
  "progress-every": { type: "string" },
} as const;

export const LOG_LEVEL_USAGE = `  --log-level <l>          error | warn | info (default: also workers joining and leaving, and
                           progress lines while work goes on) | debug (progress every second)
  --progress-every <s>     seconds between progress lines at info (default 10)`;

export interface ProcessLog {
  level: LogLevel;
  error(line: string): void;
  warn(line: string): void;
  info(line: string): void;
  /** Start printing `line()` every period while it changes; returns a stop function. */
  progress(line: () => string): () => void;
}

export function processLog(values: { "log-level"?: string | undefined; "progress-every"?: string | undefined }, io: Io): ProcessLog {
  const level = (values["log-level"] ?? "info") as LogLevel;
  if (!LOG_LEVELS.includes(level)) throw new BadOptionError("log-level", `one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(values["log-level"])}`);
  const every = values["progress-every"] === undefined ? 10 : Number(values["progress-every"]);
  if (!(every > 0) || !Number.isFinite(every)) throw new BadOptionError("progress-every", `seconds > 0, got ${JSON.stringify(values["progress-every"])}`);
  const at = (l: LogLevel) => LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(l);
  return {
    level,
    error: (line) => io.err(line),
    warn: (line) => at("warn") && io.err(line),
    info: (line) => at("info") && io.out(line),
    progress(line) {
      if (!at("info")) return () => undefined;
      let last = "";
      const timer = setInterval(
        () => {
          const text = line();
          if (text !== last) io.out(text);
          last = text;
        },
        (level === "debug" ? 1 : every) * 1000,
      );
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}
