"""Confining one launch: the argv, environment and ``preexec_fn`` that run it in its plan.

``bwrap`` wraps the argv (``supervisor.sandbox.wrap``); ``landlock`` keeps the argv (for
``net = "model"`` the proxy variables name the proxy's own loopback port, the one Landlock lets
it connect to) and returns a ``preexec_fn`` that enforces the ruleset in
the child before the exec, with ``TMPDIR`` set to the session's private temporary directory.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from protocol.sandbox import SandboxEffective
from supervisor.sandbox import SandboxPlan, landlock, proxy_env, wrap

__all__ = ["Confined", "confine"]


class Confined(msgspec.Struct, kw_only=True, frozen=True):
    """A launch as confined: run ``argv`` with ``env`` (``None`` removes a variable), calling
    ``preexec`` in the child before the exec when it is set."""

    argv: list[str]
    env: dict[str, str | None]
    preexec: Callable[[], None] | None = None


def confine(argv: list[str], env: dict[str, str], plan: SandboxPlan, effective: SandboxEffective,
            *, join: list[str] | None = None) -> Confined:
    """``argv`` with ``env`` confined by ``plan`` through ``effective`` (``join``: the session's
    network namespace, for bubblewrap with ``net = "model"``); raises
    ``landlock.LandlockError`` when the kernel refuses the ruleset."""
    if effective == "bwrap":
        wrapped, new_env = wrap(argv, env, plan, join=join or ())
        return Confined(argv=wrapped, env=new_env)
    if effective == "landlock":
        changed: dict[str, str | None] = {**env, **plan.env}
        if plan.tmp_dir is not None:
            changed["TMPDIR"] = str(plan.tmp_dir)
        if plan.net == "model":  # no namespace: the proxy listens on proxy_port itself
            changed.update(proxy_env(plan.proxy_port))
        return Confined(argv=list(argv), env=changed, preexec=landlock.preexec_hook(plan))
    return Confined(argv=list(argv), env=dict(env))
