"""Values no harness child could take are refused at ``session.create``, over the wire, naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .daemonproc import DaemonProc, raw_client


async def test_nul_bytes_bad_env_names_and_an_empty_cwd_are_bad_requests(daemon: DaemonProc, tmp_path: Path) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"model": "opus\u0000"}, "model"),
        ({"env": {"TOKEN": "x\u0000y"}}, "env.TOKEN"),
        ({"env": {"A=B": "x"}}, "env"),
        ({"cwd": ""}, "cwd"),
    ]
    async with raw_client(daemon) as client:
        for fields, field in cases:
            reply = await client.call("session.create", **{"harness": "fake", "cwd": str(tmp_path), **fields})
            assert reply["type"] == "error" and reply["code"] == "bad_request", reply
            assert reply["data"] == {"field": field} and field.split(".")[0] in reply["message"]
        assert (await client.ok("session.list"))["sessions"] == []
