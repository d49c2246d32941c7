"""Section ``[placement]`` of the configuration: which backend places session children, and how.

``local`` (the default) runs every child on the daemon's machine, as corral always has; ``ray``
places each on a node of a Ray cluster (``pip install 'corral[ray]'``). ``corral daemon
--placement``/``--ray-address`` override the file (``with_flags``).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta, Struct

from protocol.errors import ConfigInvalid

__all__ = ["ADDRESS_PATTERN", "Backend", "PlacementConfig", "with_flags"]

Backend = Literal["local", "ray"]

ADDRESS_PATTERN = r"^(auto|(ray://)?(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):[0-9]{1,5})$"
"""``auto`` (the cluster this machine joined with ``ray start``), ``HOST:PORT`` (its head's GCS
address) or ``ray://HOST:PORT`` (a Ray Client server); an IPv6 host goes in brackets."""

_Address = Annotated[str, Meta(
    pattern=ADDRESS_PATTERN,
    description="auto, HOST:PORT or ray://HOST:PORT",
)]
_PositiveSeconds = Annotated[float, Meta(gt=0)]
_Resource = Annotated[str, Meta(pattern=r"^[^\s]*$", description="a resource name without spaces")]


class PlacementConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[placement]``: where session children run (``local``: this machine; ``ray``:
    the nodes of a Ray cluster, chosen by the fewest live corral children)."""

    backend: Backend = "local"
    address: _Address = "auto"  # ray: the cluster to join; ignored by local
    heartbeat_timeout: _PositiveSeconds = 5.0  # a node agent that misses the daemon this long kills its children
    node_resource: _Resource = ""  # when set, only nodes offering this custom resource host sessions


def with_flags(config: PlacementConfig, *, backend: str | None = None,
               address: str | None = None) -> PlacementConfig:
    """``config`` with ``corral daemon --placement``/``--ray-address`` applied; a bad flag is
    ``ConfigInvalid`` naming it (a command line is fixed at once, unlike a file's key)."""
    values = msgspec.to_builtins(config)
    for flag, key, value in (("--placement", "backend", backend), ("--ray-address", "address", address)):
        if value is None:
            continue
        values[key] = value
        try:
            msgspec.convert(values, PlacementConfig)
        except msgspec.ValidationError:
            wanted = "local or ray" if key == "backend" else "auto, HOST:PORT or ray://HOST:PORT"
            raise ConfigInvalid(f"bad {flag} {value!r}: want {wanted}",
                                data={"flag": flag}) from None
    placed = msgspec.convert(values, PlacementConfig)
    if address is not None and placed.backend == "local":
        raise ConfigInvalid("--ray-address needs the ray backend: add --placement ray "
                            "(or set [placement] backend = \"ray\")", data={"flag": "--ray-address"})
    return placed
