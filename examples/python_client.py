#!/usr/bin/env python3
"""A natsched client in Python, written from docs/protocol.md and docs/nats.md alone.

It joins a cluster, submits a small graph (inc, then add on its result, and a task that
fails with a dependent), prints one JSON line per wanted key (its result, or the error the
scheduler reported), shows a graph the scheduler refuses, releases its keys and leaves.
docs/protocol.md, "A client in another language", walks through it.

    pip install nats-py
    natsched scheduler --nats nats://127.0.0.1:4222 --cluster demo
    natsched worker --nats nats://127.0.0.1:4222 --cluster demo --name w1 \\
        --functions examples/python_client_tasks.mjs
    python examples/python_client.py --nats nats://127.0.0.1:4222 --cluster demo

Exit status 0 when every wanted key got its report and the refused graph was refused.
"""

import argparse
import asyncio
import json
import secrets
import sys

import nats
import nats.errors

PROTOCOL_VERSION = 1
HEARTBEAT_INTERVAL = 0.5  # seconds; the scheduler releases a client silent for 10 s
REQUEST_TIMEOUT = 5.0


class SchedulerRefused(Exception):
    """An op the scheduler answered with {ok: false, error: {name, code, message, keys?}}."""

    def __init__(self, error):
        super().__init__(error.get("message", "refused"))
        self.error = error


class TaskFailed(Exception):
    """A wanted key the scheduler reported with key-erred."""

    def __init__(self, key, failed_key, error):
        super().__init__(error.get("message", "task failed"))
        self.key = key
        self.failed_key = failed_key
        self.error = error


class DataUnavailable(Exception):
    """No worker named in key-in-memory gave the result."""


class NatschedClient:
    def __init__(self, nc, cluster, client_id=None):
        self.nc = nc
        self.cluster = cluster
        self.id = client_id or "py-" + secrets.token_hex(4)
        self.reports = {}  # key -> future of its key-in-memory / key-erred op
        self.fragments = {}  # fragment id -> {index: bytes}
        self.heartbeat = None
        self.joined = False

    def subject(self, *tokens):
        return ".".join(("natsched", self.cluster) + tokens)

    async def join(self):
        # Subscribe to our report subject before anything can be reported on it.
        await self.nc.subscribe(self.subject("client", self.id), cb=self.on_message)
        await self.nc.flush()
        await self.send([{"op": "client-join", "client": self.id}])
        self.joined = True
        self.heartbeat = asyncio.create_task(self.keep_alive())

    async def submit(self, tasks, wants):
        """update-graph; raises SchedulerRefused if the graph is refused (then nothing changed)."""
        # Waiting before the request: a key already in memory is reported at once, maybe before the reply.
        fresh = [key for key in wants if key not in self.reports]
        for key in fresh:
            self.reports[key] = asyncio.get_running_loop().create_future()
        try:
            await self.send([{"op": "update-graph", "client": self.id, "tasks": tasks, "wants": wants}])
        except SchedulerRefused:
            for key in fresh:
                self.reports.pop(key).cancel()
            raise

    async def result(self, key, timeout):
        """The value of a wanted key, fetched from a worker that holds it."""
        report = await asyncio.wait_for(asyncio.shield(self.reports[key]), timeout)
        if report["op"] == "key-erred":
            raise TaskFailed(key, report["failedKey"], report["error"])
        if report["op"] == "key-cancelled":
            # As natsched's own client fails a future then: CancelledError, code CANCELLED.
            raise TaskFailed(key, key, {"name": "CancelledError", "code": "CANCELLED", "message": report["reason"]})
        for worker in report["workers"]:
            reply = await self.get_data(worker, [key])
            if key in reply.get("data", {}):
                return reply["data"][key]
        raise DataUnavailable(f"{key}: none of {report['workers']} has it")

    async def release(self, keys):
        await self.send([{"op": "release-keys", "client": self.id, "keys": keys}])
        for key in keys:
            self.reports.pop(key, None)

    async def leave(self):
        if self.heartbeat is not None:
            self.heartbeat.cancel()
        if self.joined:
            await self.send([{"op": "client-leave", "client": self.id}])
            self.joined = False

    # -- the wire ------------------------------------------------------------------------

    def envelope(self, ops):
        return json.dumps({"v": PROTOCOL_VERSION, "from": self.id, "ops": ops}).encode()

    async def send(self, ops):
        """One envelope as a request: one reply per op, in order."""
        msg = await self.nc.request(self.subject("scheduler", "client", self.id), self.envelope(ops), timeout=REQUEST_TIMEOUT)
        answer = json.loads(msg.data)
        if "error" in answer:
            raise SchedulerRefused({"name": "ProtocolError", "code": "PROTOCOL", "message": answer["error"]})
        for reply in answer["replies"]:
            if not reply.get("ok"):
                raise SchedulerRefused(reply["error"])
        return answer["replies"]

    async def keep_alive(self):
        beat = self.envelope([{"op": "heartbeat-client", "client": self.id}])
        while True:
            await asyncio.sleep(HEARTBEAT_INTERVAL)
            await self.nc.publish(self.subject("scheduler", "client", self.id), beat)

    async def on_message(self, msg):
        body = self.reassemble(msg)
        if body is None:
            return
        envelope = json.loads(body)
        if envelope.get("v") != PROTOCOL_VERSION:
            return
        for op in envelope.get("ops", []):
            waiting = self.reports.get(op.get("key"))
            if op.get("op") in ("key-in-memory", "key-erred", "key-cancelled") and waiting is not None and not waiting.done():
                waiting.set_result(op)

    def reassemble(self, msg):
        """The message's body; a message above max_payload comes as fragments (Natsched-Frag: id/index/count)."""
        header = (msg.headers or {}).get("Natsched-Frag")
        if header is None:
            return msg.data
        frag_id, index, count = header.rsplit("/", 2)
        parts = self.fragments.setdefault(frag_id, {})
        parts[int(index)] = msg.data
        if len(parts) < int(count):
            return None
        del self.fragments[frag_id]
        return b"".join(parts[i] for i in range(int(count)))

    async def get_data(self, worker, keys):
        """get-data in JSON; a reply too big for one message is a manifest whose chunks we pull."""
        subject = self.subject("data", worker)
        request = {"op": "get-data", "keys": keys, "who": self.id, "encoding": "json"}
        reply = json.loads((await self.nc.request(subject, json.dumps(request).encode(), timeout=REQUEST_TIMEOUT)).data)
        if "transfer" in reply:
            transfer = reply["transfer"]
            chunks = []
            for index in range(transfer["chunks"]):
                chunk = await self.nc.request(subject, json.dumps({"op": "get-chunk", "id": transfer["id"], "index": index}).encode(), timeout=REQUEST_TIMEOUT)
                chunks.append(chunk.data)
            reply = json.loads(b"".join(chunks))
        if "error" in reply:
            raise DataUnavailable(f"{worker}: {reply['error']}")
        return reply


def error_fields(error):
    """The typed error as the protocol carries it: class name, message, and natsched's code when it has one."""
    return {field: error[field] for field in ("name", "code", "message", "keys") if field in error}


def emit(line):
    print(json.dumps(line), flush=True)


async def run(nats_url, cluster, timeout):
    nc = await nats.connect(nats_url, name="natsched-python-example")
    client = NatschedClient(nc, cluster)
    ok = True
    try:
        await client.join()
        tasks = [
            {"key": "py-inc", "func": "inc", "args": [1], "deps": []},
            {"key": "py-add", "func": "add", "args": [{"$key": "py-inc"}, 10], "deps": ["py-inc"]},
            {"key": "py-check", "func": "checkNonNegative", "args": [-1], "deps": []},
            {"key": "py-after-check", "func": "inc", "args": [{"$key": "py-check"}], "deps": ["py-check"]},
        ]
        wants = [task["key"] for task in tasks]
        await client.submit(tasks, wants)
        for key in wants:
            try:
                emit({"key": key, "result": await client.result(key, timeout)})
            except TaskFailed as failure:
                emit({"key": key, "failedKey": failure.failed_key, "error": error_fields(failure.error)})
            except (DataUnavailable, asyncio.TimeoutError) as problem:
                emit({"key": key, "problem": str(problem) or "no report in time"})
                ok = False
        try:
            await client.submit([{"key": "py-nowhere", "func": "no_such_function", "args": [], "deps": []}], ["py-nowhere"])
            emit({"key": "py-nowhere", "problem": "the scheduler took a graph no worker can run"})
            ok = False
        except SchedulerRefused as refusal:
            emit({"refused": "py-nowhere", "error": error_fields(refusal.error)})
        await client.release(wants)
    finally:
        await client.leave()
        await nc.drain()
    return ok


def main():
    parser = argparse.ArgumentParser(description="Submit a small graph to a natsched cluster over NATS, from Python.")
    parser.add_argument("--nats", default="nats://127.0.0.1:4222", help="NATS server URL")
    parser.add_argument("--cluster", required=True, help="natsched cluster name")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each result")
    args = parser.parse_args()
    try:
        ok = asyncio.run(run(args.nats, args.cluster, args.timeout))
    except nats.errors.NoRespondersError:
        sys.exit(f"no scheduler of cluster {args.cluster!r} answers on {args.nats}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
