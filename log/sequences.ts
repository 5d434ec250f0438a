/**
 * Per-actor sequence checking: each actor's records are numbered 0, 1, 2, ... with no
 * gaps. A jump forward is a "gap" (records lost). A repeat or a step backwards is a
 * "duplicate"; the file reader drops such records so each actor's records it returns
 * have strictly increasing seqs.
 */
import type { LogProblem, LogRecord } from "./types.js";

export class SequenceChecker {
  private readonly next = new Map<string, number>();

  /** Reading starts in the middle of `actor`'s log: its next record is expected at `seq`. */
  startAt(actor: string, seq: number): void {
    this.next.set(actor, seq);
  }

  /**
   * The problem with `record`'s seq, if any. `where` locates it for messages. A
   * "duplicate" means the caller must drop the record; after a "gap" it is kept.
   */
  check(record: LogRecord, where: { line?: number; index?: number; offset?: number }): LogProblem | undefined {
    const expected = this.next.get(record.actor) ?? 0;
    const found = record.seq;
    if (found === expected) {
      this.next.set(record.actor, found + 1);
      return undefined;
    }
    const at = where.line !== undefined ? `line ${where.line}` : where.offset !== undefined ? `record #${where.index} (frame at byte ${where.offset})` : `record #${where.index}`;
    const problem: LogProblem = { kind: "gap", actor: record.actor, expected, found, message: "" };
    if (where.line !== undefined) problem.line = where.line;
    if (where.offset !== undefined) problem.offset = where.offset;
    if (found > expected) {
      this.next.set(record.actor, found + 1);
      const missing = found - expected === 1 ? `seq ${expected} is missing` : `seqs ${expected}..${found - 1} are missing`;
      problem.message = `${at}: actor ${record.actor} expected seq ${expected}, found ${found}: ${missing}`;
      return problem;
    }
    problem.kind = "duplicate";
    problem.message = `${at}: actor ${record.actor} expected seq ${expected}, found ${found}, which is not after the seqs already read`;
    return problem;
  }
}

/** Gap and duplicate problems in an in-memory log (e.g. a MemoryLogSink's records). */
export function checkSequences(records: readonly LogRecord[]): LogProblem[] {
  const checker = new SequenceChecker();
  const problems: LogProblem[] = [];
  records.forEach((record, index) => {
    const problem = checker.check(record, { index });
    if (problem) problems.push(problem);
  });
  return problems;
}
