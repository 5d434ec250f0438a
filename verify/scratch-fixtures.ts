import { readFileSync } from "node:fs";
import { fixtureFor, saveFixture } from "./fixtures.js";
const dir = "tests/fixtures/dst";
const load = (p: string) => JSON.parse(readFileSync(p, "utf8"));
const items = [
  { file: "/tmp/fx-a.json", inv: "quiescence", msg: "w1 still has child-1 waiting", seed: 7, profile: "none",
    note: "A task processing on w1 failed because its input (scattered data on the killed w0) was lost; the scheduler took it out of processing without telling w1, which kept it waiting on a fetch for ever. Fixed: SchedulerCore.failDependent sends free-keys to the worker it was processing on." },
  { file: "/tmp/fx-b.json", inv: "liveness", msg: "sum-0-0 ends processing.assigned; expected memory", seed: 11, profile: "none",
    note: "w1 was told leaf-1 is on w0 (a new incarnation); a transfer from the old, killed w0 failed later and made w1 forget w0 as a holder, leaving leaf-1 to fetch with no holder and sum-0-0 stuck. Fixed: WorkerCore drops a holder after a failed or incomplete transfer only if it was named before the transfer was asked for (holderSince / gatherAskedAt)." },
  { file: "/tmp/fx-c.json", inv: "liveness", msg: "load-0-2 ends processing.assigned; expected memory", seed: 21, profile: "fifo",
    note: "compute-task(load-0-2) named only w1 as holder of data-0 and was delayed past w1's death; data-0 was still on w0, but w2 was never told, so it fetched from nobody for ever. Fixed: when a holder leaves (worker-lost, missing-data) the scheduler re-sends compute-task to workers processing a dependent with the current holders (SchedulerCore.resendCompute), and a worker refreshes the holders of a waiting task's inputs from it (WorkerCore.refreshHolders)." },
  { file: "/tmp/reorder-case.json", inv: "quiescence", msg: "w1 still has sum-0-0 waiting", seed: 11, profile: "reorder",
    known: "free-keys(sum-0-0) overtook the compute-task(sum-0-0) sent before it (per-sender reordering, which the NATS transport can produce when it re-publishes its window after a reconnect). The worker ignores a free-keys for a key it does not know, then takes the compute-task and waits for ever on inputs the scheduler released. Scheduler results are right; the worker leaks the task. Needs ordered delivery per sender (e.g. the NATS receiver holding newer Natsched-Seq messages until gaps fill) or run ids on compute-task/free-keys, as Dask's stimulus ids." },
  { file: "/tmp/dup-shrunk.json", inv: "at-most-once", msg: "leaf-2 started a second time (on w0, earlier at 0) and no worker has died", seed: 5, profile: "duplicate",
    known: "A duplicated compute-task(leaf-2) arrived after the worker had finished and released leaf-2, so it ran again. No shipped transport delivers a copy (NATS drops them by Natsched-Seq; the in-process bus delivers once): the cores assume exactly-once delivery. Kept to show what a transport without de-duplication would do." },
];
for (const it of items) {
  const c = load(it.file);
  const f: any = fixtureFor(c, { invariant: it.inv as any, at: -1, message: it.msg }, { seed: it.seed, profile: it.profile as any });
  if (it.note) f.note = it.note;
  if (it.known) f.known = it.known;
  console.log(saveFixture(dir, f));
}
