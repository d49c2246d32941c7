"""Lazy re-exports (PEP 562) for a package whose submodules must stay light.

Python runs a package's ``__init__`` before any of its submodules, so a package that re-exports
an I/O object (a trio actor, a process child) makes every plain-data or sans-IO module beside it
load trio too. ``lazy_exports`` keeps such a name importable from the package
(``from supervisor.proc import ProcessChild``) and listed by ``dir()``, but imports the module
that defines it on first use. The package imports the same names under ``TYPE_CHECKING`` and
installs the hooks in its ``else`` branch, so a type checker sees each name as it is (and a name
that is not there as an error)::

    if typing.TYPE_CHECKING:
        from supervisor.proc.child import ProcessChild as ProcessChild
    else:
        __getattr__, __dir__ = lazy_exports(__name__, {"ProcessChild": "supervisor.proc.child"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``; ``names`` maps each lazy name to the
    module (absolute) that defines it. A name is imported once, then cached on the package."""

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
