"""Whether a session can run where it would start: its harness's binary here, before anything is
written, and after its first child, the placement node's verdict (``SessionTable.create`` and
``resume``).
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

from actors.harness import Driver
from protocol.errors import ErrorCode, HarnessUnavailable, error_from_wire

if TYPE_CHECKING:  # the actor loads with the first session
    from actors.session.actor import Session

__all__ = ["check_available", "refuse_if_not_here"]

_NOT_HERE = (str(ErrorCode.PLACEMENT_CWD_MISSING), str(ErrorCode.PLACEMENT_BINARY_MISSING))
"""Why a first child may not start on the node a placement backend chose: a create error."""


async def check_available(driver: Driver, options: dict[str, Any]) -> None:
    """``harness_unavailable`` for a missing binary (``options.binary`` or the detected one)
    or one older than the driver's floor."""
    binary = options.get("binary")
    if isinstance(binary, str) and binary:
        if shutil.which(os.path.expanduser(binary)) is None:
            raise HarnessUnavailable(f"{driver.name}: {binary!r} is not an executable")
        return
    detection = await driver.detect()
    if not detection.available:
        raise HarnessUnavailable(f"{driver.name} is not available: {detection.reason or 'not found'}",
                                 data={"harness": driver.name})


async def refuse_if_not_here(session: Session) -> None:
    """Close ``session`` and raise its first child's placement refusal, if that is how it failed
    (the node lacks the cwd or the binary: a restart would fail alike)."""
    failure = session.core.first_failure
    if failure is not None and failure[0] in _NOT_HERE:
        await session.close("daemon")
        raise error_from_wire(*failure)
