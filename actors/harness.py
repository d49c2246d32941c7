"""The contract between a session actor and a harness driver.

A driver is two pure pieces and one I/O piece:

* ``launch(request) -> Launch``: the argv, env overrides and files that start the child. Pure.
* ``translator(request) -> Translator``: a sans-IO object. Frames from the child's stdout go in
  through ``receive``; session commands go in through ``prompt``/``steer``/…; out come normalized
  events (``protocol.events``) and ``Send`` frames to write to the child's stdin. No clock reads
  (time comes in as ``now``), no I/O.
* ``detect() -> Detection``: finds the binary and its version (runs ``--version``). Async.

The session owns everything else: state, the event log, permission policy, held prompts,
restarts, and the child itself, spawned from ``Launch`` by ``actors.session.child.spawn_process``
(the runtime's process API). A driver whose children are not plain processes (a native worker
forked from a fork server) gives itself a ``spawn(launch, spec, ledger)`` attribute of the same
shape, an async context manager yielding an ``actors.session.child.HarnessChild``; the session
then uses it instead. Nothing else changes for the driver.

Client-side work (optional, additive). Some protocols make the agent call *us* for I/O: ACP's
``fs/read_text_file``, ``fs/write_text_file`` and ``terminal/*``. A translator cannot do I/O, so
it hands such a job out as a ``Work`` output, and only when the session said it runs them
(``HarnessRequest.runs_work``). A session that sets ``runs_work`` must, per child process:

1. open ``async with driver.work_runner(request, ledger) as runner:`` around the child's life
   (drivers whose translators emit ``Work`` have ``work_runner``; it returns an async context
   manager; process children it starts are recorded in ``ledger``, the crash ledger, if given);
2. for each ``Work(id, job)`` output, start ``outcome = await runner.run(job)`` in a nursery that
   belongs to that child (jobs may block for long, e.g. a terminal's wait for exit: never in the
   frame loop), and when it returns, if that child is still the current one, hand
   ``translator.finished(id, outcome, now)``'s outputs to the usual output handling;
3. when the child ends (crash, close, restart), cancel that nursery and leave the ``async
   with`` block (it kills and reaps what the jobs left running, e.g. terminal process groups,
   shielded and bounded). Outcomes of a dead child are dropped.

``actors.session.child`` does this for every session whose driver has ``work_runner``;
``tests/actors/vendors/acp/live.py`` does the same around a real agent without a daemon.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from protocol.base import Data
from protocol.events import Decision, Event
from protocol.models import Detection, Features, McpServer, Permissions
from protocol.confinement import Confinement
from protocol.sandbox import SandboxInfo


class HarnessRequest(Data, kw_only=True, frozen=True):
    """What a session asks of a driver. ``env`` holds secrets: never log or persist its values."""

    session_id: str
    cwd: str
    model: str | None = None
    permissions: Permissions = Permissions()
    env: dict[str, str] = {}
    mcp_servers: list[McpServer] = []
    options: dict[str, Any] = {}
    resume: str | None = None
    instructions: str | None = None
    work_dir: str
    """A private directory (mode 0700) where the driver's launch may place files."""
    runs_work: bool = False
    """The session runs ``Work`` outputs (see the module docstring); translators emit none if not."""
    state_dir: str | None = None
    """The daemon's state directory: client-side work never touches it (the work runner refuses it),
    bar a session cwd that is a worktree under it."""
    sandbox: SandboxInfo | None = None
    """The session's sandbox (``actors.sandboxing``), ``effective`` checked; None: unconfined."""
    sandbox_masks: list[str] = []
    """Directories a sandboxed child must not see but for its own parts (the state directory,
    the worktrees root)."""
    confinement: Confinement | None = None
    """A native session's sandbox plan, which its worker enforces on itself (``protocol.native``)."""
    proxy_socket: str | None = None
    """The session's network proxy (a Unix socket) for ``net = "model"``; None when it runs none
    (``actors.sandboxing.netproxy``)."""
    proxy_port: int | None = None
    """The proxy's loopback TCP port, under Landlock (no network namespace: the harness talks to
    the proxy directly, and may connect to that port only); None otherwise."""
    proxy_join: list[str] = []
    """Under bubblewrap, the argv prefix that enters the session's network namespace, where the
    proxy listens on ``127.0.0.1:3128`` (``supervisor.sandbox.sandboxnet``); empty otherwise."""


class Launch(Data, kw_only=True, frozen=True):
    """How to start the harness child; ``files`` are written (mode 0600) before the spawn."""

    argv: list[str]
    env: dict[str, str] = {}
    cwd: str
    files: dict[str, str] = {}
    framing: Literal["ndjson", "content_length", "length_prefix"] = "ndjson"


class Send(Data, kw_only=True, frozen=True):
    """A frame for the child's stdin, already encoded (framing included)."""

    data: bytes


class Work(Data, kw_only=True, frozen=True):
    """Client-side I/O the harness asked for: run ``job`` with the driver's ``WorkRunner`` and give
    the outcome back through ``translator.finished(id, …)`` (see the module docstring)."""

    id: int
    job: Any
    """A job the driver's work runner understands (a frozen msgspec Struct); opaque to the session."""


Output = Event | Send
"""What a translator hands back to the session."""

WorkOutput = Event | Send | Work
"""What a translator built with ``runs_work`` may hand back (``Output`` plus ``Work``)."""


class WorkRunner(Protocol):
    """Runs one child's ``Work`` jobs (I/O); one per child process, from ``driver.work_runner``."""

    async def run(self, job: Any) -> Any:
        """Do ``job`` and return its outcome; a failure of the job is an outcome, not a raise.

        Cancellation: cancelling it abandons the job; what it started is killed when the
        work runner's ``async with`` block ends.
        """


class Translator(Protocol):
    """A sans-IO vendor protocol core for one child process (a new one per restart)."""

    @property
    def ready(self) -> bool:
        """True once the child can take a prompt (handshake done, if the vendor has one)."""

    @property
    def vendor_session_id(self) -> str | None:
        """The vendor's own session/thread id once known (kept in meta for resume)."""

    def start(self, now: float) -> list[Output]:
        """Frames to send right after the spawn (a handshake), possibly none."""

    def receive(self, frame: bytes, now: float) -> list[Output]:
        """Translate one stdout frame; raises ``protocol.errors.ProtocolError`` on garbage."""

    def prompt(self, text: str, now: float) -> list[Output]:
        """Start a turn with ``text``; only called when ``ready`` and no turn runs."""

    def steer(self, text: str, now: float) -> list[Output] | None:
        """Deliver ``text`` into the running turn, or ``None`` when the vendor cannot (the session holds it)."""

    def interrupt(self, now: float) -> list[Output]:
        """Stop the running turn."""

    def set_model(self, model: str, now: float) -> list[Output]:
        """Use ``model`` from now on; raises ``protocol.errors.Unsupported`` if the vendor cannot."""

    def decide(self, permission_id: str, decision: Decision, now: float) -> list[Output]:
        """Answer the permission request ``permission_id``."""

    def goodbye(self, now: float) -> list[Output]:
        """Frames to send before stdin is closed in the graceful close."""

    # Translators that emit ``Work`` also have
    # ``finished(self, work_id: int, outcome: Any, now: float) -> list[Output]``.


class Driver(Protocol):
    """A harness kind: its name, static features, launch builder, translator and detection."""

    name: str
    features: Features

    def launch(self, request: HarnessRequest) -> Launch:
        """Build the child's argv, env and files from the request. Pure."""

    def translator(self, request: HarnessRequest) -> Translator:
        """A fresh translator for one child process."""

    async def detect(self, *, models: bool = False) -> Detection:
        """Find the binary, its version and login state; never reads or returns a token.
        ``models`` also runs a models probe that is slow (a CLI that must open a session or
        load every provider to list them); a fast one runs every time."""

    # Drivers whose translators emit ``Work`` also have
    # ``work_runner(self, request: HarnessRequest, ledger: Any = None)
    #  -> AbstractAsyncContextManager[WorkRunner]``.
