"""A real daemon (``actors.app.App``) that checks some files once it is up, for ``corral stop`` tests.

``python lsp_daemon.py STATE_DIR CONFIG WORK_DIR FILE=TEXT...``: runs the daemon on STATE_DIR
with CONFIG, then writes each FILE (relative to WORK_DIR) through ``diagnostics_after_write``,
so that its language servers are running, and prints one JSON line of the reports' server
states. It then serves until stopped (``corral stop``), like ``corral daemon``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import trio

from actors.app import App, Config
from supervisor.config import load_config
from supervisor.server import Host, run_daemon
from supervisor.statedir import StateDir


async def main(state_root: str, config: str, work: str, files: list[str]) -> None:
    loaded = load_config(Config, config)
    state = StateDir(Path(state_root))
    state.ensure()
    host = Host(state, loaded.config.daemon)
    app = App(host, loaded)
    async with trio.open_nursery() as nursery:
        await nursery.start(run_daemon, state, loaded.config.daemon, app, host)
        states = {}
        for item in files:
            name, _, text = item.partition("=")
            report = await app.lsp.diagnostics_after_write(work, name, text)
            states[name] = {s.server: s.state for s in report.servers}
        print(json.dumps(states), flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
