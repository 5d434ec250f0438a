/**
 * A task key's prefix, as Dask's key_split groups its progress bars: the words before the
 * first part that is a number or a token ("chunk-0042", "chunk-9f3a...", "('sum', 3)" -> "sum").
 */
const TOKEN = /^(\d+|[0-9a-f]{8,})$/i;

export function keyPrefix(key: string): string {
  const tuple = /^\(\s*['"]([^'"]+)['"]/.exec(key);
  const text = tuple ? tuple[1]! : key;
  const words: string[] = [];
  for (const word of text.split("-")) {
    if (words.length > 0 && TOKEN.test(word)) break;
    words.push(word);
  }
  return words.join("-") || key;
}
