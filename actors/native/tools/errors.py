"""The typed failures of the coding tools, each with a stable code the model and clients see.

A tool never lets one of these escape to its caller: the tool functions catch ``ToolError`` and
turn it into a ``ToolOutcome`` with ``is_error`` set and ``code`` filled, because a model can act
on "you must read that file first" but an agent loop cannot act on a traceback.
"""

from __future__ import annotations

import enum


class ToolErrorCode(enum.StrEnum):
    """Every code a coding tool reports. Never rename or reuse a value (a test pins the list)."""

    UNKNOWN_TOOL = "unknown_tool"
    """The model called a tool name that is not in the table."""
    INVALID_ARGUMENTS = "invalid_arguments"
    """The arguments do not fit the tool's parameters (wrong type, out of range, bad regex)."""
    PATH_OUTSIDE_WORKSPACE = "path_outside_workspace"
    """The path, once symlinks are resolved, is not inside the session's working directory."""
    NOT_FOUND = "not_found"
    """The path does not exist."""
    NOT_A_FILE = "not_a_file"
    """A file tool was pointed at a directory or a special file."""
    NOT_A_DIRECTORY = "not_a_directory"
    """ls was pointed at something that is not a directory."""
    NOT_READ = "not_read"
    """write or edit of an existing file that this session has not read."""
    STALE_READ = "stale_read"
    """write or edit of a file that changed on disk since this session last read it."""
    NO_MATCH = "no_match"
    """edit found no place matching ``old_string``."""
    AMBIGUOUS_MATCH = "ambiguous_match"
    """edit found several places matching ``old_string`` and ``replace_all`` was false."""
    BINARY_FILE = "binary_file"
    """The file holds NUL bytes or is not valid UTF-8."""
    TOO_LARGE = "too_large"
    """The file is larger than the read limit."""
    TIMEOUT = "timeout"
    """bash ran past its timeout; its process group was killed."""
    NONZERO_EXIT = "nonzero_exit"
    """bash finished with a non-zero exit status (the output is still shown)."""
    OUTPUT_LIMIT = "output_limit"
    """The session's tool-output budget is spent."""
    IO_ERROR = "io_error"
    """The operating system refused an operation (permissions, disk full, ...)."""
    INTERNAL = "internal"
    """A bug in the tool; the message names the exception."""


class ToolError(Exception):
    """Raised inside a tool to end it with an error outcome; caught before the caller sees it."""

    def __init__(self, code: ToolErrorCode, message: str, *, candidates: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.candidates = candidates
