/**
 * Turns the lines after the header into records and problems. Shared by the streaming
 * and the synchronous reader so both report exactly the same things.
 */
import { decodeRecordLine } from "./codec.js";
import { SequenceChecker } from "./sequences.js";
import type { LogProblem, LogRecord } from "./types.js";

export class LogScanner {
  readonly problems: LogProblem[] = [];
  private readonly sequences = new SequenceChecker();
  private lineNumber: number;

  /** `firstLine`: the 1-based number of the first line to be scanned. */
  /** `startAt`: actors whose records start at a seq other than 0 (a slice that starts them from snapshots). */
  constructor(firstLine: number, startAt?: ReadonlyMap<string, number>) {
    this.lineNumber = firstLine;
    for (const [actor, seq] of startAt ?? []) this.sequences.startAt(actor, seq);
  }

  /** A newline-terminated line: its record, or undefined if it is skipped (and reported). */
  line(bytes: Buffer): LogRecord | undefined {
    const line = this.lineNumber++;
    if (bytes.length === 0) {
      this.problems.push({ kind: "malformed", line, message: `line ${line}: empty line` });
      return undefined;
    }
    const decoded = decodeRecordLine(bytes);
    if (!decoded.ok) {
      this.problems.push({ kind: decoded.kind, line, message: `line ${line}: ${decoded.message}` });
      return undefined;
    }
    const problem = this.sequences.check(decoded.record, { line });
    if (problem) {
      this.problems.push(problem);
      if (problem.kind === "duplicate") return undefined;
    }
    return decoded.record;
  }

  /**
   * The end of the file. `tail` is an unterminated last line: a record whose write was
   * cut short (a crash, or a writer still running), never returned even if it parses.
   */
  end(tail: Buffer | undefined): void {
    if (tail === undefined || tail.length === 0) return;
    const line = this.lineNumber++;
    this.problems.push({
      kind: "torn",
      line,
      message: `line ${line}: torn last record (${tail.length} bytes without a final newline)`,
    });
  }
}
