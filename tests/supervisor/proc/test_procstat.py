"""The one ``/proc/<pid>/stat`` parser: command names with spaces and parentheses, zombies, junk."""

from __future__ import annotations

import os
import sys

import pytest

from supervisor.proc.procstat import ProcStat, parse_stat, read_stat

# Fields 3 to 22 of a real line, the command name aside.
REST = b"Z 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0"


@pytest.mark.parametrize("name", [b"sleep", b"a b", b"x) S 9 9 (y", b"(((", b""])
def test_the_name_cannot_fool_it(name: bytes) -> None:
    assert parse_stat(b"77 (" + name + b") " + REST) == ProcStat("Z", 1, 42, 12345)


@pytest.mark.parametrize("line", [b"", b"garbage", b"77 (x) S 1 2"])
def test_a_line_that_is_not_one_is_a_value_error(line: bytes) -> None:
    with pytest.raises(ValueError):
        parse_stat(line)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_this_process() -> None:
    stat = read_stat(os.getpid())
    assert (stat.state, stat.ppid, stat.pgid) == ("R", os.getppid(), os.getpgid(0))
    with pytest.raises(FileNotFoundError):
        read_stat(2**22 + 1)  # above the kernel's pid_max limit
