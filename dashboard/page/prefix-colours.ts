/**
 * A colour per task prefix, from the prefix itself (a hash), so the same prefix has the same
 * colour in every view and in both streams of a what-if. Red is left out: it marks failures.
 */
const PALETTE = [
  "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#9467bd", "#c5b0d5", "#8c564b", "#c49c94",
  "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5", "#393b79", "#637939",
];

export const FAILURE_COLOUR = "#d62728";

const cache = new Map<string, string>();

export function prefixColour(prefix: string): string {
  let colour = cache.get(prefix);
  if (colour === undefined) {
    // FNV-1a over the UTF-16 units.
    let h = 0x811c9dc5;
    for (let i = 0; i < prefix.length; i++) h = Math.imul(h ^ prefix.charCodeAt(i), 0x01000193);
    colour = PALETTE[(h >>> 0) % PALETTE.length]!;
    cache.set(prefix, colour);
  }
  return colour;
}
