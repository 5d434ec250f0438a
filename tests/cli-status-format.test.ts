/** `natsched status`'s text: workers, tasks and the work-stealing counters the status query returns. */
import { describe, expect, it } from "vitest";
import { formatStatus } from "../cli/status.js";

const base = {
  state: "running",
  workers: [{ name: "w1", id: "w1-1", state: "running", nthreads: 2, host: "h", processing: 3, occupancy: 1.5, nbytes: 2048, keys: 4 }],
  tasks: { memory: 4, "processing.assigned": 3 },
  queued: 1,
  noWorker: 0,
};

describe("formatStatus", () => {
  it("prints the steal counters, per level where any request was made", () => {
    const requests = Array(15).fill(0);
    const confirmed = Array(15).fill(0);
    const rejected = Array(15).fill(0);
    const aborted = Array(15).fill(0);
    requests[0] = 5;
    confirmed[0] = 3;
    rejected[0] = 1;
    requests[6] = 2;
    aborted[6] = 1;
    const text = formatStatus("prod", { ...base, stealing: { requests, confirmed, rejected, aborted, stale: 2, inFlight: 2 } });
    expect(text).toContain("cluster prod: scheduler running, 1 worker(s), 2 thread(s)");
    expect(text).toContain("stealing: 7 requested, 3 confirmed, 1 rejected, 1 aborted, 2 in flight, 2 stale answers; per level (requested/confirmed/rejected/aborted): L0 5/3/1/0, L6 2/0/0/1");
  });

  it("says when stealing is off, and says nothing of it for a scheduler that does not report it", () => {
    expect(formatStatus("prod", { ...base, stealing: null })).toContain("stealing: off");
    expect(formatStatus("prod", base)).not.toContain("stealing");
  });

  it("says how many ops the scheduler refused, when it refused any", () => {
    expect(formatStatus("prod", { ...base, refused: 3 })).toContain("refused: 3 op(s) out of their sender's role");
    expect(formatStatus("prod", { ...base, refused: 0 })).not.toContain("refused");
    expect(formatStatus("prod", base)).not.toContain("refused");
  });
});
