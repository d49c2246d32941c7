"""The parameters of each tool, exactly as the model sees them (field names are the contract).

Optional parameters are ``UNSET`` when the model leaves them out, so the JSON schema shows a
plain optional property (no ``null``), which every provider's function-declaration dialect
accepts. Field descriptions and bounds travel into the schema.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import UNSET, Meta, UnsetType

_PATH = "relative to the working directory, or absolute inside it"


class _Params(msgspec.Struct, kw_only=True, frozen=True):
    """Base of every tool's parameters."""


class ReadParams(_Params, kw_only=True, frozen=True):
    """Parameters of read: a numbered window of a text file."""

    path: Annotated[str, Meta(description=f"File to read, {_PATH}.")]
    offset: Annotated[int, Meta(ge=1, description="First line to show, 1-based (default 1).")] | UnsetType = UNSET
    limit: Annotated[int, Meta(ge=1, description="Most lines to show (default 2000).")] | UnsetType = UNSET


class WriteParams(_Params, kw_only=True, frozen=True):
    """Parameters of write: a whole file."""

    path: Annotated[str, Meta(description=f"File to create or overwrite, {_PATH}.")]
    content: Annotated[str, Meta(description="The complete new content of the file.")]


class EditParams(_Params, kw_only=True, frozen=True):
    """Parameters of edit: one replacement in a file."""

    path: Annotated[str, Meta(description=f"File to edit, {_PATH}.")]
    old_string: Annotated[str, Meta(description="Text to replace, copied from the file; unique unless replace_all.")]
    new_string: Annotated[str, Meta(description="Text to put in its place.")]
    replace_all: Annotated[bool, Meta(description="Replace every occurrence (default false).")] = False


class BashParams(_Params, kw_only=True, frozen=True):
    """Parameters of bash: one command line."""

    command: Annotated[str, Meta(description="Shell command line, run by bash in the working directory.")]
    timeout: Annotated[float, Meta(ge=1, description="Seconds before the command is killed (default 120, at most 600).")] | UnsetType = UNSET


class GrepParams(_Params, kw_only=True, frozen=True):
    """Parameters of grep: a regex over files."""

    pattern: Annotated[str, Meta(description="Regular expression (Python syntax) searched for in each line.")]
    path: Annotated[str, Meta(description=f"File or directory to search, {_PATH} (default: all of it).")] = "."
    glob: Annotated[str, Meta(description="Only files whose name (or relative path, if it has a /) matches, e.g. *.py.")] | UnsetType = UNSET


class FindParams(_Params, kw_only=True, frozen=True):
    """Parameters of find: paths by glob."""

    pattern: Annotated[str, Meta(description="Glob matched against names (or relative paths, if it has a /); ** spans directories.")]
    path: Annotated[str, Meta(description=f"Directory to search, {_PATH} (default: all of it).")] = "."


class LsParams(_Params, kw_only=True, frozen=True):
    """Parameters of ls: one directory."""

    path: Annotated[str, Meta(description=f"Directory to list, {_PATH} (default: the working directory).")] = "."
