"""``options.autonomous`` on the daemon side: checked and sent by the translator, the goal as the
first prompt (``actors.router``), and ``corral new --goal/--max-turns``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors import router
from actors.harness import HarnessRequest, Send
from actors.native.daemon.translate import NativeTranslator
from protocol.errors import BadRequest, SessionBusy
from protocol.events import Checkpoint, Init, Result
from protocol.framing import LengthPrefixFramer
from protocol.messages import SessionCreate
from protocol.native import Autonomy, Start, decode_command, encode_event
from supervisor.cli import commands, sessions
from supervisor.cli.parser import resolve


def translator(tmp: Path, options: dict[str, Any]) -> NativeTranslator:
    request = msgspec.convert({"session_id": "s-1", "cwd": str(tmp), "model": "openai/gpt-5-mini",
                               "work_dir": str(tmp / "s" / "harness"), "options": options},
                              HarnessRequest)
    return NativeTranslator(request, providers={}, prices={}, daemon_env={})


def test_start_carries_the_autonomy_and_a_bad_table_is_refused(tmp_path: Path) -> None:
    framer = LengthPrefixFramer()
    [out] = translator(tmp_path, {"autonomous": {"goal": "g", "max_turns": 3,
                                                 "on_turn_error": "skip"}}).start(0)
    assert isinstance(out, Send)
    framer.receive_data(out.data)
    [start] = [decode_command(f) for f in framer.frames()]
    assert isinstance(start, Start)
    assert start.autonomous == Autonomy(goal="g", max_turns=3, on_turn_error="skip")
    for bad in ({"max_turns": 3}, {"goal": "g", "max_turns": 0}, {"goal": "g", "bogus": 1},
                {"goal": "g", "on_turn_error": "panic"}, "goal"):
        with pytest.raises(BadRequest):
            translator(tmp_path, {"autonomous": bad})


def test_a_resumed_run_makes_the_worker_busy(tmp_path: Path) -> None:
    t = translator(tmp_path, {"autonomous": {"goal": "g"}})
    t.start(0)
    t.receive(encode_event(Init(vendor_session_id="n-1")), 0)
    t.receive(encode_event(Checkpoint(turn=2, resumed=True)), 0)
    with pytest.raises(SessionBusy):
        t.prompt("hello", 0)
    t.receive(encode_event(Result(stop_reason="completed")), 0)
    assert t.prompt("hello", 0)


def test_the_goal_is_the_first_prompt_of_a_native_session_without_one() -> None:
    create = SessionCreate(id=1, harness="native", cwd="/", options={"autonomous": {"goal": "g"}})
    assert router._goal_as_prompt(create).prompt == "g"
    other = msgspec.structs.replace(create, harness="claude")
    assert router._goal_as_prompt(other).prompt is None
    with pytest.raises(BadRequest):
        router._goal_as_prompt(msgspec.structs.replace(create, options={"autonomous": {}}))


def test_corral_new_goal_and_max_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[SessionCreate] = []

    def create(_state: Path, request: SessionCreate) -> Any:
        sent.append(request)
        return argparse.Namespace(session=argparse.Namespace(id="s-1"), warnings=[])

    monkeypatch.setattr(sessions, "_create", create)  # `corral new` sends through it
    args = commands.build_parser().parse_args(
        ["new", "--harness", "native", "--model", "openai/x", "--goal", "fix it",
         "--max-turns", "5", "--option", 'autonomous={"max_cost_usd": 1.5}'])
    resolve(args.handler)(args)
    assert sent[0].options == {"autonomous": {"goal": "fix it", "max_turns": 5,
                                              "max_cost_usd": 1.5}}
    assert sent[0].prompt is None
    args = commands.build_parser().parse_args(["new", "--harness", "native", "--max-turns", "5"])
    with pytest.raises(SystemExit):  # --max-turns without --goal is a usage error
        resolve(args.handler)(args)
