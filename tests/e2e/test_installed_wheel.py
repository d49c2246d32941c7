"""corral as a user gets it from ``pip install``: a wheel built from the sources, installed into
a fresh venv, run from there with no checkout in sight.

The wheel is built offline (``pip wheel --no-build-isolation``, setuptools from the test extra)
from a copy of the package sources alone (no ``config/``, no ``tests/``), installed without its
dependencies into a venv made without pip or system site packages, and only then handed the
dependencies: a ``.pth`` line naming this interpreter's site directories (a path line, so the
``.pth`` files there, the editable install of the checkout among them, are not run). The CLI
runs from the venv's ``bin`` with the cwd outside the checkout and no ``PYTHONPATH``.

What must hold there: ``corral start`` starts a daemon that imports corral from the venv (its
native fork server and worker run in the venv's site-packages, the directory that holds the
``actors`` package the daemon imported; no ``PYTHONPATH`` reaches it); a native turn against the
fake model server with a priced model has a ``cost_usd`` (the price table is package data); the
browser UI's page is served; ``corral defaults`` prints the shipped files byte for byte;
``corral --version`` and ``corral version --json`` report the wheel's version.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import urllib.request
import zipfile
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing, asynccontextmanager
from pathlib import Path

import psutil
import pytest
import trio

from protocol.events import Result
from supervisor import __version__
from supervisor.client import open_client
from tests.fakes.model_script import say
from tests.fakes.model_server import FakeModels

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "supervisor", "actors")
LIMIT = 300  # building, installing and starting from cold files, on a loaded machine
MODEL = "gpt-4.1-mini"  # priced in the shipped table: input 0.40, output 1.60 $/Mtok
NOT_SHIPPED = {"supervisor/server/ui/screenshot.png"}  # the README's picture, not served


class Venv:
    """The venv and its site-packages, and how to run its programs as a user would."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home
        self.python = root / "bin" / "python"
        purelib = sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)})
        self.site = Path(purelib)

    def env(self) -> dict[str, str]:
        """The user's environment: nothing of the checkout, a config and state home of its own."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") and not k.startswith("CORRAL_")}
        env.update(XDG_CONFIG_HOME=str(self.home / "config"), XDG_STATE_HOME=str(self.home / "state"),
                   PATH=os.pathsep.join([str(self.root / "bin"), env.get("PATH", "")]))
        return env

    async def corral(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return await trio.run_process([str(self.root / "bin" / "corral"), *args], check=False,
                                      capture_stdout=True, capture_stderr=True, env=self.env(),
                                      cwd=str(self.home))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built offline from a copy of the package sources."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for package in PACKAGES:
        shutil.copytree(REPO / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--wheel-dir", str(tmp / "dist"), str(source)], cwd=tmp)
    (built,) = (tmp / "dist").glob("corral-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh venv with the wheel installed, then this interpreter's dependencies made visible."""
    tmp = tmp_path_factory.mktemp("venv")
    made = Venv(tmp / "venv", tmp / "home")
    made.home.mkdir()
    run([sys.executable, "-m", "venv", "--without-pip", str(made.root)], cwd=tmp)
    # Installed first, into a venv that sees nothing else: pip cannot mistake the checkout's
    # editable install for this one (nor touch it).
    run([sys.executable, "-m", "pip", "--python", str(made.python), "install", "--no-deps",
         "--no-index", "--disable-pip-version-check", str(wheel)], cwd=tmp)
    sites = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (made.site / "_corral_test_dependencies.pth").write_text("".join(f"{p}\n" for p in sites))
    return made


def run(argv: list[str], *, cwd: Path, env: Mapping[str, str] | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=LIMIT,
                          check=False)
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_wheel_ships_every_file_of_the_packages(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = {str(p.relative_to(REPO)) for package in PACKAGES for p in (REPO / package).rglob("*")
              if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    assert wanted - NOT_SHIPPED - names == set()
    assert {f"actors/defaults/{name}" for name in ("prices.toml", "corral.toml", "schema.json")} <= names


def test_the_venv_imports_corral_from_itself_only(venv: Venv) -> None:
    code = ("import json, sys, importlib.metadata as m, actors, protocol, supervisor; "
            "print(json.dumps({'files': [actors.__file__, protocol.__file__, supervisor.__file__], "
            "'dist': str(m.distribution('corral').locate_file('')), 'version': m.version('corral'), "
            "'path': sys.path}))")
    found = json.loads(run([str(venv.python), "-c", code], cwd=venv.home, env=venv.env()))
    assert all(Path(f).is_relative_to(venv.site) for f in found["files"]), found
    assert Path(found["dist"]) == venv.site and found["version"] == __version__
    assert not any(Path(p).is_relative_to(REPO) for p in found["path"] if p), found["path"]


async def test_an_installed_daemon_prices_a_native_turn(venv: Venv) -> None:
    server = FakeModels([say("Priced.", input_tokens=1000, output_tokens=500)])
    state = venv.home / "state" / "corral"
    work = venv.home / "work"
    work.mkdir()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            async with started(venv, state):
                made = await venv.corral(
                    "new", "--state-dir", str(state), "--harness", "native",
                    "--model", f"openai/{MODEL}", "--cwd", str(work), "--permissions", "auto",
                    "--env", "OPENAI_API_KEY=sk-wheel-test",
                    "--option", f"base_url=http://127.0.0.1:{port}/v1", "--prompt", "hello")
                assert made.returncode == 0, made.stderr.decode()
                sid = made.stdout.decode().splitlines()[0]
                result = await first_result(state, sid)
                assert result.is_error is False
                assert result.cost_usd == round(1000 * 0.40e-6 + 500 * 1.60e-6, 8)

                daemon = psutil.Process(json.loads((state / "daemon.json").read_text())["pid"])
                assert daemon.cmdline()[:3] == [str(venv.python), "-m", "actors.app"]
                assert "PYTHONPATH" not in daemon.environ()
                assert not Path(daemon.cwd()).is_relative_to(REPO)
                # The fork server and the worker run where the daemon's actors package lies.
                natives = [p for p in daemon.children(recursive=True)
                           if any(a.startswith("actors.native") for a in p.cmdline())]
                assert len(natives) >= 2, [p.cmdline() for p in natives]
                assert {Path(p.cwd()) for p in natives} == {venv.site}

                await check_the_ui_page(venv, state)
            nursery.cancel_scope.cancel()
    assert server.model_requests()[0].body["model"] == MODEL


async def test_version_and_the_shipped_defaults_from_the_installed_cli(venv: Venv) -> None:
    with trio.fail_after(LIMIT):
        flag = await venv.corral("--version")
        assert (flag.returncode, flag.stdout.decode()) == (0, f"corral {__version__}\n")
        as_json = json.loads((await venv.corral("version", "--json")).stdout)
        assert set(as_json) == {"corral", "python", "trio", "google-adk", "mcp"}
        assert as_json["corral"] == __version__
        assert all(isinstance(v, str) and v[0].isdigit() for v in as_json.values()), as_json
        for what, name in (("config", "corral.toml"), ("prices", "prices.toml"),
                           ("schema", "schema.json")):
            printed = await venv.corral("defaults", what)
            assert printed.returncode == 0, printed.stderr.decode()
            assert printed.stdout == (REPO / "config" / name).read_bytes()


@asynccontextmanager
async def started(venv: Venv, state: Path) -> AsyncIterator[None]:
    """``corral start`` from the venv, and ``corral stop`` (which must succeed) afterwards."""
    begun = await venv.corral("start", "--state-dir", str(state), "--port", "0")
    assert begun.returncode == 0, begun.stderr.decode()
    try:
        yield
    finally:
        with trio.CancelScope(shield=True):
            stopped = await venv.corral("stop", "--state-dir", str(state))
        assert stopped.returncode == 0, stopped.stderr.decode()


async def first_result(state: Path, sid: str) -> Result:
    async with open_client(state) as client:
        async with aclosing(client.events(sid, 1)) as events:
            async for frame in events:
                if isinstance(frame.event, Result):
                    return frame.event
    raise AssertionError("the session's events ended before a result")


async def check_the_ui_page(venv: Venv, state: Path) -> None:
    """``corral ui``'s one-time link serves the page that ships in the wheel."""
    login = await venv.corral("ui", "--state-dir", str(state))
    assert login.returncode == 0, login.stderr.decode()
    url = login.stdout.decode().splitlines()[0]

    def fetch() -> tuple[int, bytes]:
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
        with direct.open(url, timeout=30) as response:
            return response.status, response.read()

    status, body = await trio.to_thread.run_sync(fetch)
    assert status == 200
    assert body == (REPO / "supervisor" / "server" / "ui" / "index.html").read_bytes()
