/**
 * Dask-style human-readable quantities: durations ("100ms", "5 minutes", "2us") and
 * byte sizes ("100MB", "1 GiB", "100MB/s"), after dask.utils.parse_timedelta and
 * parse_bytes. Units are case-insensitive. Pure.
 */

const NUMBER = String.raw`[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?`;
const DURATION_PATTERN = new RegExp(String.raw`^\s*(${NUMBER})\s*([a-zµμ]*)\s*$`, "i");
const SIZE_PATTERN = new RegExp(String.raw`^\s*(${NUMBER})\s*([a-z]*)\s*(/\s*s)?\s*$`, "i");

/**
 * Sub-second units are divisors so that "9ms" is exactly 0.009 and "5us" exactly 5e-6:
 * multiplying gives 9 * 1e-3 = 0.009000000000000001 and 5 * 1e-6 = 4.9999999999999996e-6.
 */
type Scale = { multiply: number } | { divide: number };

function unitTable(entries: ReadonlyArray<readonly [Scale, readonly string[]]>): ReadonlyMap<string, Scale> {
  const table = new Map<string, Scale>();
  for (const [scale, names] of entries) for (const name of names) table.set(name, scale);
  return table;
}

const DURATION_UNITS = unitTable([
  [{ divide: 1e9 }, ["ns", "nanosecond", "nanoseconds"]],
  [{ divide: 1e6 }, ["us", "µs", "μs", "microsecond", "microseconds"]],
  [{ divide: 1e3 }, ["ms", "millisecond", "milliseconds"]],
  [{ multiply: 1 }, ["", "s", "sec", "secs", "second", "seconds"]],
  [{ multiply: 60 }, ["m", "min", "mins", "minute", "minutes"]],
  [{ multiply: 3600 }, ["h", "hr", "hrs", "hour", "hours"]],
  [{ multiply: 86400 }, ["d", "day", "days"]],
  [{ multiply: 604800 }, ["w", "week", "weeks"]],
]);

// As in Dask, a bare prefix ("k", "Mi") means bytes and lower case means the same as upper.
const SIZE_UNITS = unitTable([
  [{ multiply: 1 }, ["", "b", "byte", "bytes"]],
  [{ multiply: 1e3 }, ["k", "kb"]],
  [{ multiply: 1e6 }, ["m", "mb"]],
  [{ multiply: 1e9 }, ["g", "gb"]],
  [{ multiply: 1e12 }, ["t", "tb"]],
  [{ multiply: 1e15 }, ["p", "pb"]],
  [{ multiply: 2 ** 10 }, ["ki", "kib"]],
  [{ multiply: 2 ** 20 }, ["mi", "mib"]],
  [{ multiply: 2 ** 30 }, ["gi", "gib"]],
  [{ multiply: 2 ** 40 }, ["ti", "tib"]],
  [{ multiply: 2 ** 50 }, ["pi", "pib"]],
]);

function apply(amount: number, scale: Scale): number {
  return "divide" in scale ? amount / scale.divide : amount * scale.multiply;
}

/**
 * Seconds in a duration string such as "100ms", "1.5 s", "5 minutes" or "2us"; a bare
 * number ("0.5") is seconds. Negative amounts parse (range checks belong to the caller).
 * Returns undefined when the text is not a duration.
 */
export function parseDuration(text: string): number | undefined {
  const match = DURATION_PATTERN.exec(text);
  if (!match) return undefined;
  const scale = DURATION_UNITS.get(match[2]!.toLowerCase());
  return scale === undefined ? undefined : apply(Number(match[1]), scale);
}

/**
 * Bytes in a size string such as "100MB", "1 GiB", "1kiB" or "512"; with `perSecond`,
 * a trailing "/s" is also accepted ("100MB/s"). Rounded to whole bytes, since Dask's
 * parse_bytes returns an int. Returns undefined when the text is not a size.
 */
export function parseSize(text: string, options: { perSecond?: boolean } = {}): number | undefined {
  const match = SIZE_PATTERN.exec(text);
  if (!match || (match[3] !== undefined && !options.perSecond)) return undefined;
  const scale = SIZE_UNITS.get(match[2]!.toLowerCase());
  return scale === undefined ? undefined : Math.round(apply(Number(match[1]), scale));
}
