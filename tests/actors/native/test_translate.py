"""The daemon side of the native harness: frames, the translator's bookkeeping, the driver."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from actors.harness import HarnessRequest, Send
from actors.native.daemon.config import (
    PRICES_FILE,
    decode_providers,
    load_prices,
    user_prices_path,
)
from actors.native.providers import ProviderTable
from actors.native.daemon.driver import NativeDriver
from actors.native.daemon.translate import NativeTranslator
from protocol.errors import BadRequest, ProtocolError, SessionBusy, UnknownPermission
from protocol.events import Assistant, Init, Permission, Result
from protocol.framing import LengthPrefixFramer
from protocol.models import Permissions
from protocol.native import (
    Command, Decide, Interrupt, Price, Prompt, SetModel, Shutdown, Start, Steer, decode_command,
    encode_event,
)

ROOT = Path(__file__).resolve().parents[3]


def _request(tmp_path: Path, **fields: object) -> HarnessRequest:
    values: dict[str, object] = {
        "session_id": "s-1", "cwd": str(tmp_path), "model": "openai/gpt-5-mini",
        "work_dir": str(tmp_path / "sessions" / "s-1" / "harness"),
        "env": {"OPENAI_API_KEY": "sk-session-key"}, **fields}
    return msgspec.convert(values, HarnessRequest)


def _commands(outputs: list[object]) -> list[Command]:
    framer = LengthPrefixFramer()
    for out in outputs:
        assert isinstance(out, Send)
        framer.receive_data(out.data)
    return [decode_command(frame) for frame in framer.frames()]


def _frame(event: object) -> bytes:
    return encode_event(event)  # type: ignore[arg-type]


def _translator(tmp_path: Path, **fields: object) -> NativeTranslator:
    return NativeTranslator(_request(tmp_path, **fields), providers={},
                            prices={"gpt-5-mini": Price(input=0.25, output=2.0)},
                            daemon_env={"OPENAI_API_KEY": "sk-daemon-key"})


def _ready(tmp_path: Path, **fields: object) -> NativeTranslator:
    translator = _translator(tmp_path, **fields)
    translator.start(0)
    translator.receive(_frame(Init(vendor_session_id="n-1", model="openai/gpt-5-mini")), 0)
    return translator


def test_start_carries_the_resolved_provider_store_and_policy(tmp_path: Path) -> None:
    translator = _translator(tmp_path, permissions=Permissions(mode="auto_edit"),
                             options={"base_url": "http://127.0.0.1:1/v1", "limits":
                                      {"bash_timeout": 5}, "thinking": True},
                             resume="n-earlier")
    [start] = _commands(translator.start(0))
    assert isinstance(start, Start)
    assert start.provider.api_key == "sk-session-key"  # the session env wins over the daemon's
    assert start.provider.base_url == "http://127.0.0.1:1/v1"
    assert (start.provider.kind, start.model) == ("openai", "openai/gpt-5-mini")
    assert start.store_dir == str(tmp_path / "sessions" / "s-1" / "native")
    assert start.session_id == "n-earlier" and start.resume_path is None
    assert start.permissions.mode == "auto_edit" and start.thinking is True
    assert start.limits == {"bash_timeout": 5}
    assert start.prices == {"gpt-5-mini": Price(input=0.25, output=2.0)}
    assert "sk-session-key" not in repr(start)


def test_init_makes_it_ready_and_names_the_native_session(tmp_path: Path) -> None:
    translator = _translator(tmp_path)
    translator.start(0)
    assert not translator.ready
    with pytest.raises(SessionBusy):
        translator.prompt("too early", 0)
    out = translator.receive(_frame(Init(vendor_session_id="n-9")), 0)
    assert out == [Init(vendor_session_id="n-9")]
    assert translator.ready and translator.vendor_session_id == "n-9"


def test_a_turn_steers_only_while_it_runs(tmp_path: Path) -> None:
    translator = _ready(tmp_path)
    assert translator.steer("early", 0) is None  # no turn: the session holds it
    assert _commands(translator.prompt("go", 0)) == [Prompt(text="go")]
    with pytest.raises(SessionBusy):
        translator.prompt("again", 0)
    assert _commands(translator.steer("more", 0) or []) == [Steer(text="more")]
    assert translator.receive(_frame(Assistant(text="hi", delta=True)), 0) == [
        Assistant(text="hi", delta=True)]
    translator.receive(_frame(Result(stop_reason="end_turn")), 0)
    assert translator.steer("late", 0) is None
    assert translator.interrupt(0) == []  # nothing to interrupt


def test_permissions_are_answered_once_and_withdrawn_by_interrupt(tmp_path: Path) -> None:
    translator = _ready(tmp_path)
    translator.prompt("go", 0)
    translator.receive(_frame(Permission(permission_id="adk-1", tool="bash", kind="exec")), 0)
    translator.receive(_frame(Permission(permission_id="adk-2", tool="write", kind="edit")), 0)
    assert _commands(translator.decide("adk-1", "allow_always", 0)) == [
        Decide(permission_id="adk-1", decision="allow_always")]
    with pytest.raises(UnknownPermission):
        translator.decide("adk-1", "deny", 0)
    assert _commands(translator.interrupt(0)) == [Interrupt()]
    with pytest.raises(UnknownPermission):
        translator.decide("adk-2", "allow", 0)


def test_set_model_resolves_the_new_provider_and_a_bad_one_is_a_bad_request(
        tmp_path: Path) -> None:
    translator = _ready(tmp_path, env={"ANTHROPIC_API_KEY": "sk-ant"})
    [command] = _commands(translator.set_model("anthropic/claude-sonnet-4", 0))
    assert isinstance(command, SetModel)
    assert (command.provider.kind, command.provider.api_key) == ("anthropic", "sk-ant")
    assert command.provider.base_url == "https://api.anthropic.com"
    for bad in ("no-slash", "nowhere/model"):
        with pytest.raises(BadRequest):
            translator.set_model(bad, 0)


def test_a_missing_or_bad_model_is_refused_when_the_session_is_created(tmp_path: Path) -> None:
    with pytest.raises(BadRequest, match="needs a model"):
        _translator(tmp_path, model=None)
    with pytest.raises(BadRequest, match="unknown model provider"):
        _translator(tmp_path, model="mystery/m")
    with pytest.raises(BadRequest, match="options.limits"):
        _translator(tmp_path, options={"limits": 3})


def test_garbage_from_the_worker_is_a_protocol_error(tmp_path: Path) -> None:
    translator = _ready(tmp_path)
    with pytest.raises(ProtocolError):
        translator.receive(b"\x93not an event", 0)


def test_goodbye_is_shutdown(tmp_path: Path) -> None:
    assert _commands(_ready(tmp_path).goodbye(0)) == [Shutdown()]


def test_resume_of_another_corral_sessions_native_id_finds_its_store(tmp_path: Path) -> None:
    earlier = tmp_path / "sessions" / "s-0" / "native"
    earlier.mkdir(parents=True)
    (earlier / "n-old.jsonl").write_text('{"type":"session"}\n')
    driver = NativeDriver(environ={})
    request = _request(tmp_path, resume="n-old")
    [start] = _commands(driver.translator(request).start(0))
    assert isinstance(start, Start)
    assert start.resume_path == str(earlier / "n-old.jsonl")
    # a restart of the same session finds its own store and copies nothing
    own = tmp_path / "sessions" / "s-1" / "native"
    own.mkdir(parents=True)
    (own / "n-old.jsonl").write_text('{"type":"session"}\n')
    [start] = _commands(driver.translator(request).start(0))
    assert isinstance(start, Start) and start.resume_path is None


def test_launch_runs_the_worker_module_with_length_prefixed_frames(tmp_path: Path) -> None:
    launch = NativeDriver(environ={}).launch(_request(tmp_path))
    assert launch.argv == [sys.executable, "-m", "actors.native"]
    assert launch.framing == "length_prefix"
    assert launch.env == {"OPENAI_API_KEY": "sk-session-key", "CORRAL_SESSION_ID": "s-1"}
    assert (Path(launch.cwd) / "actors" / "native" / "__main__.py").exists()


async def test_detect_lists_providers_and_whether_each_has_a_key() -> None:
    providers = {"local": ProviderTable(kind="openai-chat", base_url="http://127.0.0.1:1/v1"),
                 "openai": ProviderTable(api_key_env="MY_OPENAI")}
    detection = await NativeDriver(providers=providers,
                                   environ={"MY_OPENAI": "sk-x", "GEMINI_API_KEY": ""}).detect()
    assert detection.available and detection.version
    found = {p.name: (p.kind, p.api_key_env, p.has_key) for p in detection.features.providers}
    assert found == {
        "openai": ("openai", "MY_OPENAI", True),
        "openai-chat": ("openai-chat", "OPENAI_API_KEY", False),
        "anthropic": ("anthropic", "ANTHROPIC_API_KEY", False),
        "gemini": ("gemini", "GEMINI_API_KEY", False),
        "local": ("openai-chat", None, False),
    }
    assert detection.features.steer and detection.features.set_model


def test_the_daemon_side_never_imports_adk_or_the_sdks() -> None:
    code = ("import sys, actors.app; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('google', 'openai', 'anthropic', 'httpx') or m.startswith(("
            "'actors.native.worker', 'actors.native.models', 'actors.native.tools'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_bad_provider_tables_are_warnings_and_left_out() -> None:
    tables, warnings = decode_providers({"ok": {"kind": "openai"}, "nokind": {},
                                         "typo": {"kind": "openai", "bse_url": "x"}})
    assert list(tables) == ["ok"]
    assert len(warnings) == 2 and any("providers.nokind" in w for w in warnings)


def test_the_shipped_price_table_loads_and_covers_the_current_models() -> None:
    prices, warnings = load_prices()
    assert warnings == []
    for model in ("gpt-4.1-mini", "gpt-5-mini", "claude-sonnet-4", "gemini-2.5-flash"):
        assert model in prices


def test_a_bad_price_entry_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text('[good]\ninput = 1\noutput = 2\n[bad]\ninput = "cheap"\n')
    prices, warnings = load_prices([path])
    assert list(prices) == ["good"] and len(warnings) == 1
    assert load_prices([tmp_path / "missing.toml"]) == ({}, [])
    (tmp_path / "broken.toml").write_text("[x\n")
    prices, warnings = load_prices([path, tmp_path / "broken.toml"])
    assert list(prices) == ["good"] and "broken.toml is unreadable" in warnings[-1]


def test_the_user_price_table_overrides_and_adds_to_the_shipped_one(tmp_path: Path) -> None:
    user = user_prices_path({"XDG_CONFIG_HOME": str(tmp_path)})
    assert user == tmp_path / "corral" / "prices.toml"
    user.parent.mkdir()
    user.write_text('["gpt-4.1-mini"]\ninput = 9\noutput = 9\n["my-model"]\ninput = 1\noutput = 1\n')
    shipped, _ = load_prices()
    prices, warnings = load_prices([PRICES_FILE, user])
    assert warnings == []
    assert prices["gpt-4.1-mini"] == Price(input=9, output=9)
    assert prices["my-model"] == Price(input=1, output=1)
    assert {k: v for k, v in prices.items() if k not in ("gpt-4.1-mini", "my-model")} == {
        k: v for k, v in shipped.items() if k != "gpt-4.1-mini"}
