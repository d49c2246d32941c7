"""Which hosts a ``net = "model"`` sandbox lets a harness reach: its model endpoints.

``model_hosts(harness, model=, options=, env=, argv=)`` reads where the harness will send its model requests
from what the session gives it, and falls back to the vendor's public endpoints:

=============  =======================================================================================
harness        endpoints (the first that is set wins; the defaults otherwise)
=============  =======================================================================================
claude         ``ANTHROPIC_BASE_URL``; else ``api.anthropic.com``
codex          ``OPENAI_BASE_URL``; ``-c …base_url=…`` overrides in its argv (``extra_args``);
               ``base_url``/``openai_base_url`` keys in ``$CODEX_HOME/config.toml``; else
               ``api.openai.com`` and ``chatgpt.com`` (a ChatGPT login's backend)
native         ``options.base_url``; else the public endpoint of the model's provider (a
               ``[providers.NAME]`` table's ``base_url`` is the caller's to add)
opencode, pi   every ``*_BASE_URL`` of the session's env; else Anthropic's, OpenAI's and Google's
ACP agents     their own variables (``GOOGLE_GEMINI_BASE_URL``, ``COPILOT_PROVIDER_BASE_URL``,
               ``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``); else their vendor's endpoints
fake           none (a scripted harness talks to nobody)
=============  =======================================================================================

A base URL given names the host (and port) to allow; when one is given the defaults are *not*
added (a harness pointed at a gateway talks to that gateway). Each item is ``HOST:PORT``, the
port from the URL's scheme when it names none. The session's ``allow_hosts`` are added by the
caller. Items are what ``supervisor.sandbox.allowlist.Allowlist.parse`` reads.
"""

from __future__ import annotations

import itertools
import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["VENDOR_HOSTS", "model_hosts"]

_ANTHROPIC = ("api.anthropic.com:443",)
_OPENAI = ("api.openai.com:443",)
_GOOGLE = ("generativelanguage.googleapis.com:443",)

VENDOR_HOSTS: Mapping[str, tuple[str, ...]] = {
    "claude": _ANTHROPIC,
    "claude-acp": _ANTHROPIC,
    "codex": (*_OPENAI, "chatgpt.com:443"),
    "codex-acp": (*_OPENAI, "chatgpt.com:443"),
    "gemini": _GOOGLE,
    "copilot": ("api.githubcopilot.com:443", "api.individual.githubcopilot.com:443", "api.github.com:443"),
    "cursor": ("api2.cursor.sh:443",),
    "opencode": (*_ANTHROPIC, *_OPENAI, *_GOOGLE, "opencode.ai:443"),
    "opencode-acp": (*_ANTHROPIC, *_OPENAI, *_GOOGLE, "opencode.ai:443"),
    "pi": (*_ANTHROPIC, *_OPENAI, *_GOOGLE),
    "grok": ("api.x.ai:443",),
    "fake": (),
}
"""Each harness's public model endpoints, used when the session names none."""

_NATIVE = {"openai": _OPENAI, "openai-chat": _OPENAI, "anthropic": _ANTHROPIC, "gemini": _GOOGLE,
           "google": _GOOGLE}

_ENV: Mapping[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_BASE_URL",),
    "claude-acp": ("ANTHROPIC_BASE_URL",),
    "codex": ("OPENAI_BASE_URL",),
    "codex-acp": ("OPENAI_BASE_URL",),
    "gemini": ("GOOGLE_GEMINI_BASE_URL",),
    "copilot": ("COPILOT_PROVIDER_BASE_URL",),
}


def model_hosts(harness: str, *, model: str | None, options: Mapping[str, Any], env: Mapping[str, str],
                argv: Sequence[str] = ()) -> list[str]:
    """The ``HOST:PORT`` items of ``harness``'s model endpoints (see the module docstring).

    ``env`` is the child's whole environment (the daemon's with the session's on top); ``argv``
    its command line. Pure but for reading Codex's ``config.toml``.
    """
    if harness == "native":
        return _native(model, options)
    if harness == "fake":
        return []
    found = [_host_port(url) for url in _urls(harness, options, env, argv)]
    found = [item for item in found if item]
    if found:
        return _unique(found)
    return list(VENDOR_HOSTS.get(harness, (*_ANTHROPIC, *_OPENAI, *_GOOGLE)))


def _urls(harness: str, options: Mapping[str, Any], env: Mapping[str, str], argv: Sequence[str]) -> list[str]:
    names = _ENV.get(harness)
    if names is None:  # opencode, pi and ACP agents we know no variables of: any *_BASE_URL
        names = tuple(sorted(name for name in env if name.endswith("_BASE_URL")))
    urls = [env[name] for name in names if env.get(name)]
    if harness in ("codex", "codex-acp"):
        urls += _codex_overrides(argv)
        home = env.get("CODEX_HOME") or os.path.join(env.get("HOME", "~"), ".codex")
        urls += _codex_config(Path(os.path.expanduser(home)) / "config.toml")
    base = options.get("base_url")
    if isinstance(base, str):
        urls.append(base)
    return urls


def _codex_overrides(argv: Sequence[str]) -> list[str]:
    """``-c KEY=VALUE`` (or ``--config``) pairs whose KEY ends in ``base_url``; VALUE is TOML."""
    urls = []
    for flag, value in itertools.pairwise(argv):
        if flag not in ("-c", "--config") or "=" not in value:
            continue
        key, _, raw = value.partition("=")
        if key.strip().endswith("base_url"):
            urls.append(raw.strip().strip("'\""))
    return urls


def _codex_config(path: Path) -> list[str]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    return list(_base_urls(data))


def _base_urls(table: Mapping[str, Any]) -> Iterable[str]:
    for key, value in table.items():
        if isinstance(value, Mapping):
            yield from _base_urls(value)
        elif key.endswith("base_url") and isinstance(value, str):
            yield value


def _native(model: str | None, options: Mapping[str, Any]) -> list[str]:
    base = options.get("base_url")
    if isinstance(base, str) and (item := _host_port(base)):
        return [item]
    provider = (model or "").partition("/")[0]
    return list(_NATIVE.get(provider, (*_ANTHROPIC, *_OPENAI, *_GOOGLE)))


def _host_port(url: str) -> str:
    """``HOST:PORT`` of ``url`` (port from the scheme when absent); empty for what is no URL."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return ""
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ""
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{port or (443 if parts.scheme == 'https' else 80)}"


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
