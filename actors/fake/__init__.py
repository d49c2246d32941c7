"""The fake harness: a scripted child speaking corral's NDJSON event vocabulary."""

from .driver import FakeDriver as FakeDriver
