"""Vendor harness drivers: one package per vendor CLI (launch builder, translator, detection),
on what they share here: ``probe`` (short-lived, group-killed probe children for versions and
models), ``detection`` (the daemon's one TTL cache of verdicts and the ``Detector`` each driver
holds) and ``options`` (the shared ``session.create`` options and the child's env order)."""

from .detection import DetectionCache as DetectionCache
from .detection import Detector as Detector
from .options import VendorOptions as VendorOptions
from .options import vendor_options as vendor_options
from .probe import ProbeFailed as ProbeFailed
