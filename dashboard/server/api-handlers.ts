/** The dashboard's JSON answers: the summary, the task stream, the cluster at a cut, a key's story. */
import { BadOptionError, NatschedError } from "../../machines/errors.js";
import { parseCut } from "../../replay/log-cut.js";
import type { DashCut } from "./model.js";
import { json, problem, type Handler } from "./route-types.js";

export const summaryHandler: Handler = ({ model }) => json(model.summary());

export const streamHandler: Handler = ({ model }) => ({ status: 200, type: "application/json; charset=utf-8", body: model.streamJson() });

/** `?index=N` (the first N records in log order), `?seq=N` or `?seq=actor:N`, or `?t=S` (seconds from the start). */
export const atHandler: Handler = async ({ model, url }) => {
  const q = url.searchParams;
  let cut: DashCut;
  try {
    if (q.has("index")) cut = { index: wholeNumber(q.get("index")!, "index") };
    else if (q.has("seq")) {
      const text = q.get("seq")!;
      if (!/^(.+:)?\d+$/.test(text)) return problem(`seq takes a seq (1234) or an actor and seq (worker.a:40), got "${text}"`);
      cut = { spec: parseCut(text, "seq") };
    } else if (q.has("t")) cut = { spec: parseCut(`+${nonNegative(q.get("t")!, "t")}`, "t") };
    else return problem("give ?index=N, ?seq=N (or actor:N) or ?t=seconds from the start");
  } catch (error) {
    if (error instanceof BadOptionError) return problem(error.message);
    throw error;
  }
  // A cut is answered over the whole log (a recorded log is read in the background).
  await model.whenLoaded();
  return json(await model.at(cut));
};

export const storyHandler: Handler = async ({ model, url }) => {
  const key = url.searchParams.get("key");
  if (!key) return problem("give ?key=<task key>");
  try {
    return json(await model.story(key));
  } catch (error) {
    if (error instanceof NatschedError) return problem(error.message, 404);
    throw error;
  }
};

function wholeNumber(text: string, name: string): number {
  if (!/^\d+$/.test(text)) throw new BadOptionError(name, `${name} takes a whole number, got "${text}"`);
  return Number(text);
}

function nonNegative(text: string, name: string): string {
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(text)) throw new BadOptionError(name, `${name} takes seconds from the run's start (2.5), got "${text}"`);
  return text;
}
