"""The durable native session store: JSONL on disk, torn lines, temp state, continuing a session."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from google.adk.events.event import Event as AdkEvent
from google.adk.events.event_actions import EventActions
from google.genai import types

from actors.native.worker.agent import APP_NAME, USER_ID
from actors.native.worker.store import JsonlSessionService, StoreCorrupt
from protocol.events import Error, Init, Result
from tests.fakes.model_script import call, say

from .workerkit import WorkerRig, run, texts


def _event(text: str, **delta: object) -> AdkEvent:
    return AdkEvent(invocation_id="i-1", author="corral",
                    content=types.Content(role="model", parts=[types.Part(text=text)]),
                    actions=EventActions(state_delta=dict(delta)))


async def _new(store: JsonlSessionService, **state: object) -> str:
    session = await store.create_session(app_name=APP_NAME, user_id=USER_ID, state=dict(state))
    return session.id


async def _load(directory: Path, session_id: str) -> tuple[JsonlSessionService, list[str]]:
    store = JsonlSessionService(directory)
    session = await store.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=session_id)
    assert session is not None
    return store, [p.text or "" for e in session.events for p in (e.content.parts or [])]


def test_events_round_trip_and_partial_events_are_not_stored(tmp_path: Path) -> None:
    async def body() -> None:
        store = JsonlSessionService(tmp_path)
        sid = await _new(store)
        session = await store.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=sid)
        assert session is not None
        await store.append_event(session, _event("one"))
        await store.append_event(session, _event("fragment").model_copy(update={"partial": True}))
        await store.append_event(session, _event("two", answer=42))
        store.close()
        again, seen = await _load(tmp_path, sid)
        loaded = await again.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=sid)
        assert seen == ["one", "two"]
        assert loaded is not None and loaded.state == {"answer": 42}
        assert (tmp_path / f"{sid}.jsonl").stat().st_mode & 0o777 == 0o600

    run(body)


def test_temp_state_is_never_written(tmp_path: Path) -> None:
    async def body() -> None:
        store = JsonlSessionService(tmp_path)
        sid = await _new(store, kept=1, **{"temp:scratch": "secret-ish"})
        session = await store.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=sid)
        assert session is not None
        await store.append_event(session, _event("x", **{"temp:more": 2, "kept": 3}))
        assert session.state["temp:more"] == 2  # live for the invocation ...
        text = (tmp_path / f"{sid}.jsonl").read_text()
        assert "temp:" not in text  # ... but never on disk
        store.close()
        again, _ = await _load(tmp_path, sid)
        loaded = await again.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=sid)
        assert loaded is not None and loaded.state == {"kept": 3}

    run(body)


@pytest.mark.parametrize("torn", [b'{"type":"event","event":{"auth', b'not json at all\n'])
def test_a_torn_last_line_is_dropped_and_the_file_truncated(tmp_path: Path, torn: bytes) -> None:
    async def body() -> None:
        store = JsonlSessionService(tmp_path)
        sid = await _new(store)
        session = await store.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=sid)
        assert session is not None
        await store.append_event(session, _event("kept"))
        store.close()
        path = tmp_path / f"{sid}.jsonl"
        whole = path.read_bytes()
        path.write_bytes(whole + torn)
        again, seen = await _load(tmp_path, sid)
        assert seen == ["kept"]
        assert again.truncated_bytes == len(torn)
        assert path.read_bytes() == whole
        # and the session takes new events after the cut
        loaded = await again.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=sid)
        assert loaded is not None
        await again.append_event(loaded, _event("after"))
        again.close()
        _, seen = await _load(tmp_path, sid)
        assert seen == ["kept", "after"]

    run(body)


def test_an_unreadable_line_before_the_last_is_corruption(tmp_path: Path) -> None:
    async def body() -> None:
        store = JsonlSessionService(tmp_path)
        sid = await _new(store)
        session = await store.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=sid)
        assert session is not None
        await store.append_event(session, _event("a"))
        store.close()
        path = tmp_path / f"{sid}.jsonl"
        path.write_bytes(path.read_bytes() + b"garbage\n" + path.read_bytes().splitlines()[1] + b"\n")
        with pytest.raises(StoreCorrupt):
            await JsonlSessionService(tmp_path).get_session(app_name=APP_NAME, user_id=USER_ID,
                                                            session_id=sid)

    run(body)


def test_a_turns_events_are_on_disk_before_its_result(tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [call("ls"), say("listed")]) as rig:
            path = rig.store / f"{rig.worker.session_id}.jsonl"
            seen_at_result: list[str] = []
            emit = rig.worker._emit

            def spy(event: object) -> None:
                if isinstance(event, Result):
                    seen_at_result.append(path.read_text())
                emit(event)  # type: ignore[arg-type]

            rig.worker._emit = spy
            await rig.turn("list")
        lines = [json.loads(line) for line in seen_at_result[0].splitlines()]
        kinds = [part for line in lines[1:] for part in line["event"].get("content", {}).get("parts", [])]
        assert any("functionCall" in p for p in kinds) and any("functionResponse" in p for p in kinds)
        assert any(p.get("text") == "listed" for p in kinds)

    run(body)


def test_a_restarted_worker_continues_the_conversation(tmp_path: Path) -> None:
    async def body() -> None:
        first = WorkerRig(tmp_path, [say("nice to meet you, Ada")])
        await first.__aenter__()
        await first.turn("my name is Ada")
        sid = first.worker.session_id
        init = first.events[0]
        assert isinstance(init, Init) and init.vendor_session_id == sid
        # no shutdown: the worker is simply gone, as after SIGKILL
        async with WorkerRig(tmp_path, [say("Ada")], session_id=sid) as second:
            again = second.events[0]
            assert isinstance(again, Init) and again.vendor_session_id == sid
            assert again.model == "openai/gpt-4.1-mini" and again.cwd == str(second.cwd)
            assert again.tools == ["read", "write", "edit", "bash", "grep", "find", "ls"]
            await second.turn("what is my name?")
        assert texts(second.llm.requests[0]) == [
            "my name is Ada", "nice to meet you, Ada", "what is my name?"]

    run(body)


def test_an_unknown_session_id_starts_a_new_session_with_an_error(tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [say("hi")], session_id="n-missing") as rig:
            pass
        errors = [e for e in rig.events if isinstance(e, Error)]
        assert [e.code for e in errors] == ["native.launch.resume_not_found"]
        init = rig.events[-1]
        assert isinstance(init, Init) and init.vendor_session_id not in (None, "n-missing")

    run(body)


def test_resume_path_continues_a_session_of_an_earlier_corral_session(tmp_path: Path) -> None:
    async def body() -> None:
        old = tmp_path / "old"
        old.mkdir()
        async with WorkerRig(old, [say("noted")]) as first:
            await first.turn("remember 7")
        sid = first.worker.session_id
        new = tmp_path / "new"
        new.mkdir()
        rig = WorkerRig(new, [say("7")], session_id=sid)
        rig._start = msgspec.structs.replace(rig._start,
                                             resume_path=str(first.store / f"{sid}.jsonl"))
        async with rig:
            await rig.turn("what number?")
        assert texts(rig.llm.requests[0]) == ["remember 7", "noted", "what number?"]
        assert (rig.store / f"{sid}.jsonl").exists()

    run(body)

