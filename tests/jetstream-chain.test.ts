/**
 * Which messages on an actor's subject are its log (log/jetstream-chain.ts): those whose
 * id links to the log's last message; everything else is foreign, with what it was.
 */
import { describe, expect, it } from "vitest";
import { LogChain, type ChainMessage } from "../log/jetstream-chain.js";
import { linkedMsgId, logMsgId, parseLogMsgId } from "../log/jetstream-layout.js";

const SUBJECT = "natsched.c.log.scheduler";
const msg = (streamSeq: number, msgId: string | undefined, extra: Partial<ChainMessage> = {}): ChainMessage => ({ streamSeq, msgId, part: undefined, size: 10, ...extra });
const linked = (seq: number, link: number, part?: number | "abandon") => linkedMsgId(logMsgId("scheduler", seq, part), link);
const verdicts = (chain: LogChain, messages: ChainMessage[]) =>
  messages.map((m) => {
    const v = chain.classify(m);
    return v.chain ? (v.gap ? "gap" : "chain") : v.problem.message.replace(/^.*skipped: /, "");
  });

describe("the chain of an actor's log messages", () => {
  it("parses and writes message ids, with and without a link", () => {
    expect(linked(12, 7)).toBe("scheduler:12@7");
    expect(parseLogMsgId("worker.w1:12/3@7")).toEqual({ actor: "worker.w1", seq: 12, part: 3, link: 7 });
    expect(parseLogMsgId("scheduler:4/abandon@9")).toEqual({ actor: "scheduler", seq: 4, part: "abandon", link: 9 });
    expect(parseLogMsgId("scheduler:4")).toEqual({ actor: "scheduler", seq: 4, part: undefined, link: undefined });
    for (const bad of ["", "scheduler", "scheduler:x@1", "scheduler:1@", ":1@2"]) expect(parseLogMsgId(bad)).toBeUndefined();
  });

  it("follows the links, skipping what does not link to the log's last message", () => {
    const chain = new LogChain("scheduler", SUBJECT);
    expect(
      verdicts(chain, [
        msg(3, linked(0, 0)),
        msg(4, undefined, { body: Buffer.from("hello"), size: 5 }),
        msg(6, linked(40, 3)),
        msg(7, "scheduler:41"),
        msg(8, linked(40, 4)),
        msg(9, linked(41, 2)),
        msg(10, linked(40, 6), { part: "0/2" }),
        msg(11, linked(40, 6, 1), { part: "1/2" }),
        msg(12, linked(40, 6), { part: "1/2" }),
        msg(13, linkedMsgId(logMsgId("worker.w1", 0), 6)),
        msg(14, "an id of someone else"),
        msg(15, linked(41, 11)),
      ]),
    ).toEqual([
      "chain",
      'it has no message id; it starts "hello"',
      "chain",
      "its message id has no link, and the log's messages before it do",
      "it follows stream seq 4, and the log's last message is stream seq 6",
      "it follows stream seq 2, and the log's last message is stream seq 6",
      'its Natsched-Part header ("0/2") does not match its message id',
      "chain",
      'its Natsched-Part header ("1/2") does not match its message id',
      "its message id names the log of worker.w1",
      "its message id is not one of a natsched log",
      "chain",
    ]);
    expect(chain.tail).toBe(15);
  });

  it("takes a legacy log (ids without links) as it is, until the first linked message", () => {
    const chain = new LogChain("scheduler", SUBJECT);
    expect(verdicts(chain, [msg(1, "scheduler:0"), msg(2, "scheduler:5"), msg(4, linked(9, 2)), msg(5, "scheduler:10")])).toEqual([
      "chain",
      "chain",
      "chain",
      "its message id has no link, and the log's messages before it do",
    ]);
  });

  it("continues past a message deleted from the stream, as a gap, and nowhere else", () => {
    const chain = new LogChain("scheduler", SUBJECT, new Set([5]));
    expect(verdicts(chain, [msg(2, linked(0, 0)), msg(8, linked(9, 5)), msg(9, linked(12, 5))])).toEqual([
      "chain",
      "gap",
      "it follows stream seq 5, and the log's last message is stream seq 8",
    ]);
  });

  it("starts from a known message of the log", () => {
    const chain = new LogChain("scheduler", SUBJECT, undefined, { tail: 100 });
    expect(verdicts(chain, [msg(101, "scheduler:7"), msg(102, linked(7, 100))])).toEqual(["its message id has no link, and the log's messages before it do", "chain"]);
  });
});
