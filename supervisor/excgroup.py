"""The one exception-group unwrapper: a nursery's group of one failure is that failure.

Trio wraps whatever a nursery's tasks raise in an ``ExceptionGroup``, even a lone error from the
body of an ``async with``. Callers of our context managers expect the error itself (``except
DaemonNotRunning:``), so each manager that owns a nursery re-raises a group whose only leaf is
one exception as that exception, with its cause; a group of several is raised as it is.
"""

from __future__ import annotations

from typing import NoReturn

__all__ = ["lone_exception", "raise_lone"]


def lone_exception(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one leaf of a group of one (nested or not); else the group itself."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        else:
            leaves.append(exc)

    walk(group)
    return leaves[0] if len(leaves) == 1 else group


def raise_lone(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Raise the lone leaf of ``group`` unwrapped, keeping its cause; or ``group`` itself."""
    leaf = lone_exception(group)
    if leaf is group:
        raise group
    raise leaf from leaf.__cause__
