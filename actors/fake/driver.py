"""The fake harness driver: ``/bin/sh -c options.script`` in the session's cwd, NDJSON both ways.

Without ``options.script`` the child is ``python -m actors.fake.child``, which answers each
prompt with a short streamed reply (and understands a few commands for tests: see that module).
``options.steer = false`` makes the session hold prompts during a turn instead of steering.
"""

from __future__ import annotations

import shlex
import shutil
import sys

import msgspec

from actors.harness import HarnessRequest, Launch, Output, Send
from protocol.errors import BadRequest, ProtocolError
from protocol.events import Decision, Event, Init
from protocol.fake import (
    FakeCommand,
    FakeInterrupt,
    FakePermissionDecision,
    FakeSetModel,
    FakeSteer,
    FakeUser,
    decode_event,
    encode_command,
)
from protocol.models import Detection, Features

DEFAULT_SCRIPT = f"exec {shlex.quote(sys.executable)} -m actors.fake.child"


class FakeOptions(msgspec.Struct, frozen=True, kw_only=True):
    """``session.create`` options the fake harness understands."""

    script: str = DEFAULT_SCRIPT
    steer: bool = True


class FakeDriver:
    """The ``fake`` harness: every layer of corral, exercised without a vendor binary."""

    name = "fake"
    features = Features(steer=True, resume=True, permissions=True, interrupt=True, set_model=True)

    def launch(self, request: HarnessRequest) -> Launch:
        options = fake_options(request)
        env = dict(request.env)
        if request.model:
            env["CORRAL_FAKE_MODEL"] = request.model
        if request.resume:
            env["CORRAL_FAKE_RESUME"] = request.resume
        return Launch(argv=["/bin/sh", "-c", options.script], env=env, cwd=request.cwd)

    def translator(self, request: HarnessRequest) -> FakeTranslator:
        return FakeTranslator(steer=fake_options(request).steer)

    async def detect(self, *, models: bool = False) -> Detection:
        sh = shutil.which("sh")
        return Detection(
            harness=self.name, available=sh is not None, version="1", path=sh,
            features=self.features, login="logged_in",
            reason=None if sh else "no /bin/sh on this machine",
        )


def fake_options(request: HarnessRequest) -> FakeOptions:
    """Decode the request's options for the fake harness; a wrong type is a ``bad_request``."""
    try:
        return msgspec.convert(request.options, FakeOptions)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"bad options for the fake harness: {exc}") from None


class FakeTranslator:
    """Sans-IO core of the fake vocabulary: event lines in, command lines out."""

    def __init__(self, *, steer: bool = True) -> None:
        self._steer = steer
        self._vendor_session_id: str | None = None

    @property
    def ready(self) -> bool:
        return True

    @property
    def vendor_session_id(self) -> str | None:
        return self._vendor_session_id

    def start(self, now: float) -> list[Output]:
        return []

    def receive(self, frame: bytes, now: float) -> list[Output]:
        try:
            event: Event = decode_event(frame)
        except msgspec.DecodeError as exc:
            raise ProtocolError(f"fake child wrote a line that is not an event: {exc}") from None
        if isinstance(event, Init) and event.vendor_session_id:
            self._vendor_session_id = event.vendor_session_id
        return [event]

    def prompt(self, text: str, now: float) -> list[Output]:
        return _send(FakeUser(text=text))

    def steer(self, text: str, now: float) -> list[Output] | None:
        return _send(FakeSteer(text=text)) if self._steer else None

    def interrupt(self, now: float) -> list[Output]:
        return _send(FakeInterrupt())

    def set_model(self, model: str, now: float) -> list[Output]:
        return _send(FakeSetModel(model=model))

    def decide(self, permission_id: str, decision: Decision, now: float) -> list[Output]:
        return _send(FakePermissionDecision(permission_id=permission_id, decision=decision))

    def goodbye(self, now: float) -> list[Output]:
        return []


def _send(command: FakeCommand) -> list[Output]:
    return [Send(data=encode_command(command))]
