"""Section ``[children]`` of the configuration: limits on every OS-process child's output."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct

__all__ = ["ChildrenConfig"]

_Count = Annotated[int, Meta(ge=0)]
_Bytes = Annotated[int, Meta(ge=1024)]


class ChildrenConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[children]``: limits on every OS-process child's output."""

    stderr_lines: _Count = 200  # last stderr lines kept for error reports
    frame_limit: _Bytes = 16 * 1024 * 1024
