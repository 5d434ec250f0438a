/** Frames kept of a failure's stack: enough to find the raising line, not a whole recursion. */
export const MAX_STACK_FRAMES = 20;
/** Characters kept of a failure's stack, message lines included. */
export const MAX_STACK_CHARS = 4096;

/**
 * A stack as V8 writes it (the message lines, then "    at ..." frames), cut to its first
 * MAX_STACK_FRAMES frames and MAX_STACK_CHARS characters; what was cut is said on a last line.
 * Pure: the hosts bound a stack before it enters a message or the log.
 */
export function boundStack(stack: string): string {
  const lines = stack.split("\n");
  const kept: string[] = [];
  let frames = 0;
  let cutFrames = 0;
  for (const line of lines) {
    if (/^\s+at /.test(line)) {
      frames += 1;
      if (frames > MAX_STACK_FRAMES) {
        cutFrames += 1;
        continue;
      }
    }
    kept.push(line);
  }
  let out = kept.join("\n");
  if (cutFrames > 0) out += `\n    ... ${cutFrames} more frame${cutFrames === 1 ? "" : "s"}`;
  if (out.length > MAX_STACK_CHARS) out = `${out.slice(0, MAX_STACK_CHARS - 40)}\n    ... (cut at ${MAX_STACK_CHARS} characters)`;
  return out;
}
