"""The fake model server for ``bench_opencode_turn``, in a process of its own: the scripted
``FakeModels`` with OpenCode's title calls answered beside the script (``title_aside``).

OpenCode asks the model for a session title during a session's first turn, concurrently with
the turn's own call; the standalone ``tests.fakes.model_server`` would hand that call the next
scripted step and shift every later one. Here it is answered aside, so the script stays one step
per turn call. The port is printed on the first line of stdout; each request is logged as one
JSON line (``aside``, ``path``) to ``--log``, for the benchmark's count check.

Run by the benchmark as ``python -m tests.bench.opencode_models``; not collected by pytest.
"""

from __future__ import annotations

import argparse

import msgspec
import trio

from tests.fakes.model_script import load_steps
from tests.fakes.model_server import FakeModels
from tests.fakes.opencode_offline import title_aside


async def _serve(script: bytes, log_path: str) -> None:
    server = FakeModels(load_steps(script), aside=title_aside)
    async with trio.open_nursery() as nursery:
        print(await nursery.start(server.serve), flush=True)
        seen = 0
        with open(log_path, "ab", buffering=0) as log:
            while True:
                await server.wait_for(lambda: len(server.requests) > seen)
                for record in server.requests[seen:]:
                    log.write(msgspec.json.encode({"aside": record.aside, "path": record.path}) + b"\n")
                seen = len(server.requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--script", required=True, help="JSON array of steps")
    parser.add_argument("--log", required=True, help="where each request is logged")
    args = parser.parse_args()
    with open(args.script, "rb") as handle:
        script = handle.read()
    try:
        trio.run(_serve, script, args.log)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
