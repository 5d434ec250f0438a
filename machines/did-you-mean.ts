/**
 * "Did you mean ...?" suggestions for misspelt names. Pure.
 */

/** Case, dashes, underscores and spaces don't count: "work_stealing" matches "workStealing". */
function normalize(name: string): string {
  return name.toLowerCase().replace(/[-_\s]/g, "");
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The candidate closest to `name`, if it is close enough to be a plausible typo
 * (at most a third of the name's length in edits, and never more than 3); ties go to
 * the earlier candidate.
 */
export function closestMatch(name: string, candidates: readonly string[]): string | undefined {
  const target = normalize(name);
  const allowed = Math.min(3, Math.max(1, Math.floor(target.length / 3)));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(target, normalize(candidate));
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= allowed ? best : undefined;
}
