"""Vendor harness drivers: one package per vendor CLI (launch builder, translator, detection),
on what they share here: ``probe`` (short-lived, group-killed probe children for versions and
models), ``detection`` (the daemon's one TTL cache of verdicts and the ``Detector`` each driver
holds) and ``options`` (the shared ``session.create`` options and the child's env order).

Detection and probes (trio, child processes) are imported on first use, so the vendors' sans-IO
translators load without them (``supervisor.lazy``).
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports

from .options import VendorOptions as VendorOptions
from .options import vendor_options as vendor_options

if typing.TYPE_CHECKING:
    from .detection import DetectionCache as DetectionCache
    from .detection import Detector as Detector
    from .probe import ProbeFailed as ProbeFailed
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "DetectionCache": "actors.vendors.detection",
        "Detector": "actors.vendors.detection",
        "ProbeFailed": "actors.vendors.probe",
    })
