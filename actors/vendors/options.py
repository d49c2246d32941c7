"""``session.create`` options every vendor driver reads, decoded once, the same way for all.

Every vendor takes ``options.binary`` (the executable; else the detected one), ``options.home``
(an isolated config home, given to the CLI through its own variables), ``options.extra_args``
(appended to the command line) and ``options.resume`` (a vendor session to continue; the session
puts it in ``HarnessRequest.resume``). A vendor with more options subclasses ``VendorOptions``
and decodes with ``vendor_options(request, TheirOptions)`` (the rest with ``VendorOptions``). Options a driver does not know are
ignored (they may be the session's: ``log_path``, ``instructions``). A wrong type is a
``bad_request`` naming the option, never its value.

The child's environment is built the same way everywhere: the vendor's fixed variables, then the
session's ``env`` (keys and base URLs), then ``options.home`` in the vendor's home variables
(``home_env``): an explicit home wins over an inherited variable. ``configured_env`` is that env
for what the configuration alone gives (``[harness.<name>] env`` and ``home``): a driver's
detection lays it over the daemon's environment, so its probes run the CLI as a session would.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TypeVar

import msgspec

from actors.harness import HarnessRequest
from protocol.errors import BadRequest

__all__ = ["VendorOptions", "configured_env", "home_env", "vendor_options"]


class VendorOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The options shared by every vendor driver (empty strings count as absent)."""

    binary: str | None = None
    home: str | None = None
    extra_args: list[str] = []
    resume: str | None = None


O = TypeVar("O", bound=VendorOptions)


def vendor_options(request: HarnessRequest, kind: type[O]) -> O:
    """Decode the options ``kind`` names from ``request.options``; ``BadRequest`` on a wrong type."""
    known = {k: v for k, v in request.options.items()
             if k in kind.__struct_fields__ and v is not None and v != ""}
    try:
        return msgspec.convert(known, kind)
    except msgspec.ValidationError as exc:
        # msgspec's message names the path (``$.extra_args[1]``) and the expected type only.
        raise BadRequest(f"bad options: {str(exc).replace('$.', 'options.')}") from None


def home_env(home: str | None, variables: Mapping[str, str]) -> dict[str, str]:
    """``variables`` (name → subdirectory of the home, ``""`` for the home itself) pointed at
    ``home``; nothing when there is no home."""
    if not home:
        return {}
    return {name: os.path.join(home, sub) if sub else home for name, sub in variables.items()}


def configured_env(fixed: Mapping[str, str], env: Mapping[str, str] | None, home: str | None,
                   home_variables: Mapping[str, str]) -> dict[str, str]:
    """The env overrides every child of a harness gets before any session adds its own: the
    vendor's ``fixed`` variables, then the configured ``env``, then the configured ``home`` in
    ``home_variables`` (the order of every launch builder). Detection probes with it."""
    return {**fixed, **(env or {}), **home_env(home, home_variables)}
