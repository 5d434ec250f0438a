"""Dask distributed peer of natsched's benchmark workloads (bench/workloads.ts).

One case per invocation; prints one JSON line {"rows": [...], "env": {...}} whose rows carry
the same `shape` keys and units as the natsched rows, so bench/run.ts can put them side by
side and print natsched/Dask ratios measured in the same run.

    /usr/bin/python3 bench/peer/dask_peer.py w1 --n 10000 [--saturation default|inf]
    /usr/bin/python3 bench/peer/dask_peer.py w2 --fanin 2|8 [--leaves 4096]
    /usr/bin/python3 bench/peer/dask_peer.py w3 --stealing on|off [--tasks 200 --sleep-ms 50]
    /usr/bin/python3 bench/peer/dask_peer.py w4 --variant spec|pinned --stealing on|off [--tasks 200 --elements 25000000]
    /usr/bin/python3 bench/peer/dask_peer.py w5 --mode map|submit --stealing on|off
    /usr/bin/python3 bench/peer/dask_peer.py w7 --shape workers|threads --pool processes|threads [--tasks 200 --ms 20]
    /usr/bin/python3 bench/peer/dask_peer.py w8 [--roots 2000 --chunk-bytes 10000000 --saturation default|inf --budget-bytes B]
common: --reps N (default 1), --threads (workers as threads in this process; default:
worker processes, as the issue's reference figures).

Clusters: LocalCluster(n_workers, threads_per_worker, processes=..., dashboard_address=None),
scheduler config set in dask.config BEFORE the cluster starts. W1/W2 use one cluster with
an untimed warm-up; W3-W5 use a fresh cluster per repetition (cold duration estimates).
W3 is the "pinned" shape: 5 keys scattered to the first worker so that the consumers are not
root-ish and go where the data is. W4 runs both: "spec" (the one 200 MB array alone, whose 200
consumers Dask classes as root-ish and spreads, copying the array) and "pinned".
"""
import argparse
import collections
import json
import os
import platform
import random
import statistics
import sys
import time

import dask
import distributed
from distributed import Client, LocalCluster, get_worker


# ---- task functions (pickled by value onto the workers) -------------------------------

def noop(x):
    return x


def one(i):
    return 1


def add(*xs):
    return sum(xs)


def slow(data, i, ms):
    time.sleep(ms / 1000)
    return get_worker().address


def fast(x, i, ms):
    time.sleep(ms / 1000)
    return len(x), get_worker().address


def spin(iterations, i):
    # A fixed count (a loop on the clock would end on time while waiting for the GIL).
    x = 0.0
    for _ in range(iterations):
        x += (x + 1) ** 0.5
    return i


def spin_timed(iterations, i):
    """spin, and the CPU this thread spent on it (s): the work a task did, as W7's .work rows count it."""
    t0 = time.thread_time()
    spin(iterations, i)
    return i, time.thread_time() - t0


def iterations_for(ms):
    """Iterations of spin taking `ms` of this thread's CPU: the best of a few probes."""
    probe = 200_000
    spin(probe, 0)
    best = 0.0
    for _ in range(7):
        t0 = time.thread_time()
        spin(probe, 0)
        best = max(best, probe / ((time.thread_time() - t0) * 1000))
    return round(best * ms)


def chunk(i, nbytes):
    import numpy as np
    return np.full(nbytes, i & 255, dtype=np.uint8)


def combine(a, b):
    # An output as large as the inputs, as summing two arrays gives (natsched's combine).
    out = a.copy()
    out[0] = (int(a[0]) + int(b[0])) & 255
    return out


def work(duration, i):
    time.sleep(duration)
    return get_worker().address


# ---- helpers ---------------------------------------------------------------------------

def summary(xs, digits=4):
    xs = list(xs)
    r = lambda x: round(x, digits) if abs(x) < 1000 else round(x, 1)
    return {"min": r(min(xs)), "median": r(statistics.median(xs)), "max": r(max(xs)), "runs": [r(x) for x in xs]}


class Cluster:
    """LocalCluster + Client with the scheduler's config fixed before it starts."""

    def __init__(self, n_workers, threads, processes, stealing=True, saturation=None):
        cfg = {"distributed.scheduler.work-stealing": bool(stealing)}
        if saturation is not None:
            cfg["distributed.scheduler.worker-saturation"] = saturation
        self._cfg = dask.config.set(cfg)
        self._cfg.__enter__()
        self.cluster = LocalCluster(n_workers=n_workers, threads_per_worker=threads,
                                    processes=processes, dashboard_address=None)
        self.client = Client(self.cluster)
        self.client.wait_for_workers(n_workers)
        self.workers = sorted(self.client.scheduler_info()["workers"])

    def close(self):
        self.client.close()
        self.cluster.close()
        self._cfg.__exit__(None, None, None)

    def idle(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) == 0:
                return
            time.sleep(0.05)
        raise RuntimeError("scheduler did not forget the previous run")

    def steals(self):
        def count(dask_scheduler):
            ext = dask_scheduler.extensions.get("stealing")
            if ext is None:
                return {"requests": 0, "confirmed": 0}
            confirmed = sum(1 for _, m in dask_scheduler.events.get("stealing", ())
                            if isinstance(m, tuple) and m and m[0] == "confirm")
            return {"requests": int(sum(ext.metrics["request_count_total"].values())), "confirmed": confirmed}
        return self.client.run_on_scheduler(count)


def on_off(b):
    return "on" if b else "off"


# ---- workloads -------------------------------------------------------------------------

def w1(a):
    sat = "inf" if a.saturation == "inf" else None
    c = Cluster(2, 1, a.processes, saturation=sat)

    def once(n):
        t0 = time.perf_counter()
        futs = c.client.map(noop, range(n), pure=False)
        res = c.client.gather(futs)
        wall = time.perf_counter() - t0
        assert res[-1] == n - 1
        del futs, res
        c.idle()
        return wall

    try:
        once(min(10000, a.n))  # as natsched's W1_WARMUP (bench/run.ts)
        walls = [once(a.n) for _ in range(a.reps)]
    finally:
        c.close()
    q = "queuing-off" if sat else "queuing-on"
    return [{"shape": f"W1.n{a.n}.{q}", "label": f"Dask W1 {a.n} no-op, 2x1, {q.replace('-', ' ')}",
             "unit": "tasks/s", "value": summary([a.n / w for w in walls]), "extra": {"wall_s": summary(walls)}}]


def w2(a):
    c = Cluster(2, 1, a.processes)

    def once(leaves):
        t0 = time.perf_counter()
        layer = [c.client.submit(one, i, pure=False) for i in range(leaves)]
        n = len(layer)
        while len(layer) > 1:
            layer = [c.client.submit(add, *layer[j:j + a.fanin], pure=False) for j in range(0, len(layer), a.fanin)]
            n += len(layer)
        result = layer[0].result()
        wall = time.perf_counter() - t0
        assert result == leaves
        del layer
        c.idle()
        return wall, n

    try:
        once(512)
        runs = [once(a.leaves) for _ in range(a.reps)]
    finally:
        c.close()
    n = runs[0][1]
    return [{"shape": f"W2.fanin{a.fanin}", "label": f"Dask W2 tree {a.leaves} leaves fan-in {a.fanin} ({n} tasks)",
             "unit": "tasks/s", "value": summary([n / w for w, _ in runs]), "extra": {"wall_s": summary([w for w, _ in runs])}}]


def w3(a):
    ideal = a.tasks * a.sleep_ms / 1000 / 4
    walls, placement, steals = [], [], []
    for _ in range(a.reps):
        c = Cluster(4, 1, a.processes, stealing=a.stealing == "on")
        try:
            data = c.client.scatter([100, 101, 102, 103, 104], workers=[c.workers[0]])[0]
            t0 = time.perf_counter()
            futs = [c.client.submit(slow, data, i, a.sleep_ms, pure=False) for i in range(a.tasks)]
            where = c.client.gather(futs)
            walls.append(time.perf_counter() - t0)
            cnt = collections.Counter(where)
            placement.append([cnt.get(w, 0) for w in c.workers])
            steals.append(c.steals())
        finally:
            c.close()
    return [{"shape": f"W3.pinned.stealing-{a.stealing}", "label": f"Dask W3 good steal, stealing {a.stealing}: makespan / ideal",
             "unit": "x ideal", "value": summary([w / ideal for w in walls]),
             "extra": {"ideal_s": ideal, "wall_s": summary(walls), "tasks_per_worker": placement, "steals": steals}}]


def w4(a):
    import numpy as np

    def counters(dask_worker):
        return sum(e["total"] for e in dask_worker.transfer_incoming_log), len(dask_worker.transfer_incoming_log)

    walls, moved, transfers, replicas, placement = [], [], [], [], []
    for r in range(a.reps):
        c = Cluster(4, 1, a.processes, stealing=a.stealing == "on")
        try:
            big = np.full(a.elements, float(r + 1))
            tiny = [np.zeros(1) + k for k in range(4)] if a.variant == "pinned" else []
            data = c.client.scatter([big] + tiny, workers=[c.workers[0]])[0]
            del big
            before = c.client.run(counters)
            t0 = time.perf_counter()
            futs = [c.client.submit(fast, data, i, a.sleep_ms, pure=False) for i in range(a.tasks)]
            res = c.client.gather(futs)
            walls.append(time.perf_counter() - t0)
            after = c.client.run(counters)
            assert all(n == a.elements for n, _ in res)
            moved.append(sum(after[w][0] - before[w][0] for w in after))
            transfers.append(sum(after[w][1] - before[w][1] for w in after))
            replicas.append(len(c.client.who_has([data])[data.key]))
            where = [w for _, w in res]
            placement.append([where.count(w) for w in c.workers])
        finally:
            c.close()
    return [
        {"shape": f"W4.{a.variant}.stealing-{a.stealing}.makespan", "label": f"Dask W4 bad steal ({a.variant}), stealing {a.stealing}: makespan",
         "unit": "s", "value": summary(walls), "extra": {"tasks_per_worker": placement, "replicas_at_end": replicas, "transfers": transfers}},
        {"shape": f"W4.{a.variant}.stealing-{a.stealing}.moved", "label": f"Dask W4 ({a.variant}) bytes moved, stealing {a.stealing}",
         "unit": "MB", "value": summary([b / 1e6 for b in moved]), "extra": {}},
    ]


W5_SEED = 20240607


def w5(a):
    durs = [a.long_ms / 1000] * a.n_long + [a.short_ms / 1000] * a.n_short
    random.Random(W5_SEED).shuffle(durs)
    lower = max(sum(durs) / 4, a.long_ms / 1000)
    walls, busy = [], []
    for _ in range(a.reps):
        c = Cluster(4, 1, a.processes, stealing=a.stealing == "on")
        try:
            t0 = time.perf_counter()
            if a.mode == "map":
                futs = c.client.map(work, durs, range(len(durs)), key=[f"work-{i:04d}" for i in range(len(durs))])
            else:
                futs = [c.client.submit(work, d, i, pure=False) for i, d in enumerate(durs)]
            where = c.client.gather(futs)
            walls.append(time.perf_counter() - t0)
            b = collections.defaultdict(float)
            for d, w in zip(durs, where):
                b[w] += d
            busy.append([round(b[w], 3) for w in c.workers])
        finally:
            c.close()
    return [{"shape": f"W5.{a.mode}.stealing-{a.stealing}", "label": f"Dask W5 imbalance ({a.mode}), stealing {a.stealing}: makespan / lower bound",
             "unit": "x bound", "value": summary([w / lower for w in walls]),
             "extra": {"lower_bound_s": lower, "wall_s": summary(walls), "sleep_s_per_worker": busy}}]


def w7(a):
    # The shapes of bench/workloads.ts w7: cores workers x 1 thread, or 1 worker x cores
    # threads; --pool threads runs them in this process (processes=False), where the GIL
    # lets one pure-Python loop run at a time.
    cores = len(os.sched_getaffinity(0))
    workers, threads = (cores, 1) if a.shape == "workers" else (1, cores)
    ideal = a.tasks * a.ms / 1000 / cores
    iterations = iterations_for(a.ms)
    walls, works = [], []
    c = Cluster(workers, threads, a.pool == "processes")
    try:
        def run(n):
            t0 = time.perf_counter()
            futs = [c.client.submit(spin_timed, iterations, i, pure=False) for i in range(n)]
            got = c.client.gather(futs)
            wall = time.perf_counter() - t0
            assert [g[0] for g in got] == list(range(n))
            del futs
            c.idle()
            return wall, sum(g[1] for g in got)
        run(2 * cores)
        for _ in range(a.reps):
            wall, work = run(a.tasks)
            walls.append(wall)
            works.append(work)
    finally:
        c.close()
    suffix = "" if a.pool == "processes" else ".dask-threads"
    per_task = [w * 1000 / a.tasks for w in works]
    return [{"shape": f"W7.{a.shape}{suffix}", "label": f"Dask W7 CPU-bound {a.tasks}x{a.ms:g}ms, {workers}x{threads}, {a.pool}: makespan / ideal",
             "unit": "x ideal", "value": summary([w / ideal for w in walls]), "extra": {"cores": cores, "iterations_per_task": iterations, "ideal_s": ideal, "wall_s": summary(walls)}},
            {"shape": f"W7.{a.shape}.work{suffix}", "label": f"Dask W7 CPU-bound {a.tasks}x{a.ms:g}ms, {workers}x{threads}, {a.pool}: makespan / (tasks' CPU / cores)",
             "unit": "x work", "value": summary([w / (k / cores) for w, k in zip(walls, works)]), "extra": {"cores": cores, "task_cpu_ms": summary(per_task), "wall_s": summary(walls)}}]


def w8_graph(roots, nbytes):
    """chunk-<i> roots, then layers of combine-<depth>-<j> over pairs (bench/w8.ts w8Graph)."""
    dsk, layer = {}, []
    for i in range(roots):
        dsk[f"chunk-{i}"] = (chunk, i, nbytes)
        layer.append(f"chunk-{i}")
    depth = 1
    while len(layer) > 1:
        nxt = []
        for j in range(0, len(layer), 2):
            if j + 1 == len(layer):
                nxt.append(layer[j])
                continue
            key = f"combine-{depth}-{j // 2}"
            dsk[key] = (combine, layer[j], layer[j + 1])
            nxt.append(key)
        layer = nxt
        depth += 1
    return dsk, layer[0]


def w8(a):
    """W8 as bench/w8.ts: a fresh cluster per repetition, the graph through client.get (dask.order
    applies), the workers' stored bytes summed every 50 ms from a thread, a run stopped once
    they pass --budget-bytes together. The bytes are each worker's managed memory as the
    scheduler (in this process) knows it, WorkerState.nbytes, read directly: asking the
    workers (client.run) took about 250 ms a round on the loaded 2-core machine."""
    import threading
    sat = "inf" if a.saturation == "inf" else None
    tag = "inf" if sat else "1.1"
    expected = sum(i & 255 for i in range(a.roots)) & 255
    peaks, walls, samples, peak_at, per_worker = [], [], [], [], []
    stopped = False
    for _ in range(a.reps):
        c = Cluster(4, 1, a.processes, saturation=sat)
        state = {"peak": 0, "at": 0.0, "per": [], "n": 0, "over": False, "stop": False}
        t0 = time.perf_counter()

        def sample():
            while not state["stop"]:
                try:
                    per = {w.address: w.nbytes for w in list(c.cluster.scheduler.workers.values())}
                except RuntimeError:  # the dict changed under the read: try again
                    continue
                total = sum(per.values())
                state["n"] += 1
                if total > state["peak"]:
                    state.update(peak=total, at=time.perf_counter() - t0, per=[round(per[w] / 1e6) for w in sorted(per)])
                if total > a.budget_bytes:
                    state["over"] = True
                    return
                time.sleep(0.05)

        try:
            dsk, root = w8_graph(a.roots, a.chunk_bytes)
            sampler = threading.Thread(target=sample, daemon=True)
            t0 = time.perf_counter()
            sampler.start()
            fut = c.client.get(dsk, root, sync=False)
            while not fut.done() and not state["over"]:
                time.sleep(0.01)
            wall = time.perf_counter() - t0
            state["stop"] = True
            sampler.join()
            peaks.append(state["peak"])
            samples.append(state["n"])
            peak_at.append(round(state["at"], 2))
            per_worker.append(state["per"])
            if state["over"]:
                stopped = True
                c.client.cancel(fut)
                break
            v = fut.result()
            assert len(v) == a.chunk_bytes and int(v[0]) == expected, (len(v), int(v[0]), expected)
            walls.append(wall)
            del fut, v
        finally:
            c.close()
    extra = {"roots": a.roots, "chunk_mb": a.chunk_bytes / 1e6, "budget_mb": round(a.budget_bytes / 1e6), "samples": samples,
             "peak_at_s": peak_at, "peak_per_worker_mb": per_worker, "sampling": "scheduler's WorkerState.nbytes (managed memory) every 50 ms"}
    label = f"Dask W8 {a.roots}x{a.chunk_bytes / 1e6:g}MB pairwise, 4x1, saturation {tag}"
    rows = [{"shape": f"W8.sat-{tag}.peak", "label": f"{label}: peak stored bytes", "unit": "MB",
             "value": summary([p / 1e6 for p in peaks]), "extra": {**extra, "stopped_at_budget": stopped}}]
    if walls:
        rows.append({"shape": f"W8.sat-{tag}.makespan", "label": f"{label}: makespan", "unit": "s", "value": summary(walls), "extra": {}})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=["w1", "w2", "w3", "w4", "w5", "w7", "w8"])
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--threads", dest="processes", action="store_false")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--saturation", choices=["default", "inf"], default="default")
    ap.add_argument("--fanin", type=int, default=2)
    ap.add_argument("--leaves", type=int, default=4096)
    ap.add_argument("--stealing", choices=["on", "off"], default="on")
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--sleep-ms", type=float, default=None)
    ap.add_argument("--elements", type=int, default=25_000_000)
    ap.add_argument("--variant", choices=["spec", "pinned"], default="pinned")
    ap.add_argument("--mode", choices=["map", "submit"], default="map")
    ap.add_argument("--n-long", type=int, default=100)
    ap.add_argument("--n-short", type=int, default=900)
    ap.add_argument("--long-ms", type=float, default=100)
    ap.add_argument("--short-ms", type=float, default=1)
    ap.add_argument("--shape", choices=["workers", "threads"], default="workers")
    ap.add_argument("--pool", choices=["processes", "threads"], default="processes")
    ap.add_argument("--ms", type=float, default=20)
    ap.add_argument("--roots", type=int, default=2000)
    ap.add_argument("--chunk-bytes", type=int, default=10_000_000)
    ap.add_argument("--budget-bytes", type=int, default=8_000_000_000)
    a = ap.parse_args()
    if a.sleep_ms is None:
        a.sleep_ms = 50 if a.workload == "w3" else 1
    env = {
        "python": sys.version.split()[0], "dask": dask.__version__, "distributed": distributed.__version__,
        "cpus": len(os.sched_getaffinity(0)), "platform": platform.platform(), "worker_processes": a.processes,
    }
    rows = {"w1": w1, "w2": w2, "w3": w3, "w4": w4, "w5": w5, "w7": w7, "w8": w8}[a.workload](a)
    print(json.dumps({"rows": rows, "env": env}), flush=True)


if __name__ == "__main__":
    main()
