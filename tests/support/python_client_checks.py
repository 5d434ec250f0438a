"""Checks of examples/python_client.py beyond its own run, for tests/python-client.test.ts.

    python tests/support/python_client_checks.py --nats URL --cluster NAME

The workers must register `ramp` (tests/support/cluster-tasks.ts) and the server's
max_payload must be well below 800 KB, so that the result of ramp(100000) comes in chunks.
Prints one JSON line per check; exits non-zero (with a traceback) when one fails.
"""

import argparse
import asyncio
import json
import os
import sys
from types import SimpleNamespace

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))

import nats  # noqa: E402
from python_client import NatschedClient  # noqa: E402


def message(body, headers=None):
    return SimpleNamespace(data=body if isinstance(body, bytes) else json.dumps(body).encode(), headers=headers)


async def reports_with_unknown_fields_and_fragments():
    """Fields and ops the client does not know are ignored; fragments are joined in index order."""
    client = NatschedClient(nc=None, cluster="none", client_id="checks")
    loop = asyncio.get_running_loop()
    client.reports = {"a": loop.create_future(), "b": loop.create_future()}
    await client.on_message(message({
        "v": 1, "from": "scheduler", "stimulus": "s-1",
        "ops": [
            {"op": "key-progress", "key": "a", "done": 0.5},
            {"op": "key-erred", "key": "a", "failedKey": "a", "stimulusId": "s-1",
             "error": {"name": "Error", "message": "no", "stack": "Error: no\n    at f"}},
        ],
    }))
    body = json.dumps({"v": 1, "from": "scheduler", "ops": [{"op": "key-in-memory", "key": "b", "nbytes": 8, "workers": ["w1"], "new": 1}]}).encode()
    third = len(body) // 3
    parts = [body[:third], body[third:2 * third], body[2 * third:]]
    for index in (2, 0, 1):
        await client.on_message(message(parts[index], {"Natsched-Frag": f"f.1/{index}/3", "Natsched-Seq": "scheduler.7"}))
    erred, in_memory = client.reports["a"].result(), client.reports["b"].result()
    assert erred["error"]["message"] == "no", erred
    assert in_memory["workers"] == ["w1"], in_memory
    assert client.fragments == {}, client.fragments
    return {"check": "unknown fields and fragments", "ok": True}


async def a_result_in_chunks(nats_url, cluster):
    """A result bigger than max_payload: get-data answers with a transfer manifest, the client pulls the chunks."""
    nc = await nats.connect(nats_url)
    client = NatschedClient(nc, cluster)
    chunks_asked = 0
    request = nc.request

    async def counting_request(subject, payload=b"", **options):
        nonlocal chunks_asked
        chunks_asked += b'"get-chunk"' in payload
        return await request(subject, payload, **options)

    nc.request = counting_request
    try:
        await client.join()
        await client.submit([{"key": "py-big", "func": "ramp", "args": [100000], "deps": []}], ["py-big"])
        values = await client.result("py-big", 30)
        await client.release(["py-big"])
    finally:
        await client.leave()
        await nc.drain()
    return {"check": "result in chunks", "chunks": chunks_asked > 1, "length": len(values), "last": values[-1]}


async def main(nats_url, cluster):
    for line in (await reports_with_unknown_fields_and_fragments(), await a_result_in_chunks(nats_url, cluster)):
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nats", required=True)
    parser.add_argument("--cluster", required=True)
    args = parser.parse_args()
    asyncio.run(main(args.nats, args.cluster))
