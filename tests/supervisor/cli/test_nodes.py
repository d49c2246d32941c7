"""``corral nodes`` and ``corral daemon|start --placement/--ray-address``, run as subprocesses
against a real daemon on the ``local`` backend."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from tests.daemonconfig import without_prewarm
from tests.supervisor.cli.test_cli import LIMIT, _new, corral, short_dir


async def test_nodes_lists_this_machine_and_the_flag_overrides_the_file(short_dir: Path) -> None:
    root = short_dir / "state"
    config = short_dir / "ray.toml"
    # Without --placement local this daemon would join a Ray cluster that is not there.
    config.write_text('[placement]\nbackend = "ray"\naddress = "10.9.9.9:6379"\n', encoding="utf-8")
    config_path = without_prewarm(short_dir / "config", config)
    with trio.fail_after(LIMIT):
        started = await corral("start", "--state-dir", str(root), "--port", "0", "--config",
                               config_path, "--placement", "local")
        assert started.code == 0, started.err
        try:
            pid = json.loads((await corral("status", "--json", "--state-dir", str(root))).out)["status"]["pid"]
            idle = json.loads((await corral("nodes", "--json", "--state-dir", str(root))).out)
            assert idle["backend"] == "local" and idle["address"] is None
            assert [(n["node_id"], n["node_ip"], n["alive"], n["agent_pid"], n["sessions"])
                    for n in idle["nodes"]] == [("local", "127.0.0.1", True, pid, 0)]

            await _new(root, short_dir)
            busy = json.loads((await corral("nodes", "--json", "--state-dir", str(root))).out)
            (node,) = busy["nodes"]
            assert node["sessions"] == 1 and node["children"] == idle["nodes"][0]["children"] + 1

            plain = await corral("nodes", "--state-dir", str(root))
            assert plain.code == 0, plain.err
            lines = plain.out.splitlines()
            assert lines[0] == "placement local"
            assert lines[1].split() == ["NODE", "IP", "ALIVE", "AGENT", "CHILDREN", "SESSIONS"]
            assert lines[2].split() == ["local", "127.0.0.1", "yes", str(pid), str(node["children"]), "1"]
        finally:
            stopped = await corral("stop", "--state-dir", str(root))
        assert stopped.code == 0, stopped.err


async def test_bad_placement_flags_are_one_line(short_dir: Path) -> None:
    root = str(short_dir / "state")
    with trio.fail_after(LIMIT):
        alone = await corral("daemon", "--state-dir", root, "--port", "0", "--placement", "local",
                             "--ray-address", "10.0.0.5:6379")
        assert alone.code == 1
        assert alone.one_error_line().startswith("corral: --ray-address needs the ray backend")
        bad = await corral("daemon", "--state-dir", root, "--port", "0", "--placement", "ray",
                           "--ray-address", "head")
        assert bad.code == 1
        assert bad.one_error_line() == ("corral: bad --ray-address 'head': "
                                        "want auto, HOST:PORT or ray://HOST:PORT")
        # corral start hands the flags to the daemon it starts, which refuses them the same way.
        started = await corral("start", "--state-dir", root, "--port", "0", "--placement", "local",
                               "--ray-address", "10.0.0.5:6379")
        assert started.code == 1
        assert "before it was ready" in started.err and "--ray-address needs the ray backend" in started.err
        unknown = await corral("daemon", "--state-dir", root, "--placement", "k8s")
        assert unknown.code == 2 and "invalid choice: 'k8s'" in unknown.err
