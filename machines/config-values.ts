/**
 * Readers that turn one raw setting (from code, a file or an environment variable)
 * into a checked value, or throw a ValueProblem saying what is wrong with it. They
 * don't know which key they read; machines/config.ts adds that. Pure.
 */
import { parseDuration, parseSize } from "./config-units.js";

export class ValueProblem extends Error {}

/** A raw value as it appears in error messages: strings quoted, containers by kind. */
export function formatValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (value === null || typeof value === "number" || typeof value === "boolean" || value === undefined) {
    return String(value);
  }
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** "inf", "Infinity", YAML's ".inf", in any case. */
function isInfinityWord(value: unknown): boolean {
  return typeof value === "string" && /^\s*\+?\.?(inf|infinity)\s*$/i.test(value);
}

export function readBoolean(value: unknown): boolean {
  if (typeof value !== "boolean") throw new ValueProblem(`expected true or false, got ${formatValue(value)}`);
  return value;
}

export function readInteger(value: unknown, min: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    throw new ValueProblem(`expected an integer >= ${min}, got ${formatValue(value)}`);
  }
  return value;
}

/** A ratio that must be > 0; Infinity (or "inf"/"Infinity") is allowed and means "no limit". */
export function readPositiveOrInfinite(value: unknown, infinityMeans: string): number {
  const number = isInfinityWord(value) ? Infinity : value;
  if (typeof number !== "number" || Number.isNaN(number)) {
    throw new ValueProblem(`expected a number > 0, or "inf" to ${infinityMeans}, got ${formatValue(value)}`);
  }
  if (number <= 0) throw new ValueProblem(`must be > 0 (or "inf" to ${infinityMeans}), got ${formatValue(value)}`);
  return number;
}

/** A finite number >= `min`. */
export function readNumberAtLeast(value: unknown, min: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < min) {
    throw new ValueProblem(`expected a finite number >= ${min}, got ${formatValue(value)}`);
  }
  return value;
}

/** workerSaturation: a ratio > 0, "inf" to disable queuing, or "adaptive" (in any case). */
export function readSaturation(value: unknown): number | "adaptive" {
  if (typeof value === "string" && /^\s*adaptive\s*$/i.test(value)) return "adaptive";
  const number = isInfinityWord(value) ? Infinity : value;
  if (typeof number !== "number" || Number.isNaN(number)) {
    throw new ValueProblem(`expected a number > 0, "inf" to disable queuing, or "adaptive", got ${formatValue(value)}`);
  }
  if (number <= 0) throw new ValueProblem(`must be > 0 (or "inf" to disable queuing, or "adaptive"), got ${formatValue(value)}`);
  return number;
}

export interface DurationRules {
  /** Zero is rejected as well as negatives. */
  positive?: boolean;
  /** Infinity / "inf" are accepted, meaning "never". */
  allowInfinity?: boolean;
}

/** Seconds, from a number of seconds or a string like "100ms" / "5 minutes". */
export function readDuration(value: unknown, rules: DurationRules = {}): number {
  const seconds =
    typeof value === "string"
      ? rules.allowInfinity && isInfinityWord(value)
        ? Infinity
        : parseDuration(value)
      : value;
  if (typeof seconds !== "number" || Number.isNaN(seconds)) {
    throw new ValueProblem(
      `expected a duration (seconds, or a string like "100ms" or "5 minutes"), got ${formatValue(value)}`,
    );
  }
  if (seconds === Infinity && !rules.allowInfinity) throw new ValueProblem(`must be finite, got ${formatValue(value)}`);
  if (rules.positive ? seconds <= 0 : seconds < 0) {
    throw new ValueProblem(`must be ${rules.positive ? ">" : ">="} 0 seconds, got ${formatValue(value)}`);
  }
  return seconds;
}

export interface SizeRules {
  /** Zero is rejected as well as negatives. */
  positive?: boolean;
  /** Only whole bytes (size strings are rounded, so this only rejects fractional numbers). */
  integer?: boolean;
  /** A rate: a trailing "/s" is accepted ("100MB/s"). */
  perSecond?: boolean;
}

/** Bytes (or bytes per second), from a number or a string like "100MB" / "1 GiB" / "100MB/s". */
export function readSize(value: unknown, rules: SizeRules = {}): number {
  const unit = rules.perSecond ? "bytes/s" : "bytes";
  const bytes = typeof value === "string" ? parseSize(value, { perSecond: rules.perSecond ?? false }) : value;
  if (typeof bytes !== "number" || Number.isNaN(bytes)) {
    const example = rules.perSecond ? `"100MB/s"` : `"100MB" or "1 GiB"`;
    throw new ValueProblem(`expected a size in ${unit} (a number, or a string like ${example}), got ${formatValue(value)}`);
  }
  if (!Number.isFinite(bytes)) throw new ValueProblem(`must be finite, got ${formatValue(value)}`);
  if (rules.positive ? bytes <= 0 : bytes < 0) {
    throw new ValueProblem(`must be ${rules.positive ? ">" : ">="} 0 ${unit}, got ${formatValue(value)}`);
  }
  if (rules.integer && !Number.isInteger(bytes)) {
    throw new ValueProblem(`must be a whole number of ${unit}, got ${formatValue(value)}`);
  }
  return bytes;
}

/** A map from task prefix to a non-negative finite duration in seconds. */
export function readDurationMap(value: unknown): Record<string, number> {
  if (!isPlainObject(value)) {
    throw new ValueProblem(`expected a map from task prefix to duration, got ${formatValue(value)}`);
  }
  // Object.fromEntries defines own properties, so even a "__proto__" prefix is just a key.
  return Object.fromEntries(
    Object.entries(value).map(([prefix, raw]) => {
      try {
        return [prefix, readDuration(raw)];
      } catch (error) {
        if (error instanceof ValueProblem) throw new ValueProblem(`entry ${JSON.stringify(prefix)}: ${error.message}`);
        throw error;
      }
    }),
  );
}
