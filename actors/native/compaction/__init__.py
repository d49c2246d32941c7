"""Deterministic context compaction for native sessions (plasmid's, with resolute's summaries).

Pure (no ADK, no I/O but the sidecar file): ``estimate`` (the fixture-pinned estimator and its
calibration), ``settings`` (``[native.compaction]``), ``plan`` (what to elide or drop, and the
replay of earlier decisions), ``sidecar`` (the decisions on disk). The worker's ADK glue is
``actors.native.worker.compactor``.

The names load with their module on first use, so the daemon, which reads ``[native.compaction]``
(``settings``) at start, imports neither the estimator nor the plan.
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from actors.native.compaction.estimate import Calibration as Calibration
    from actors.native.compaction.estimate import canonical_json as canonical_json
    from actors.native.compaction.estimate import content_tokens as content_tokens
    from actors.native.compaction.estimate import declaration_tokens as declaration_tokens
    from actors.native.compaction.estimate import system_tokens as system_tokens
    from actors.native.compaction.plan import ELIDED as ELIDED
    from actors.native.compaction.plan import Decision as Decision
    from actors.native.compaction.plan import Drop as Drop
    from actors.native.compaction.plan import Elide as Elide
    from actors.native.compaction.plan import Entry as Entry
    from actors.native.compaction.plan import Outcome as Outcome
    from actors.native.compaction.plan import Summary as Summary
    from actors.native.compaction.plan import compact as compact
    from actors.native.compaction.plan import entries as entries
    from actors.native.compaction.plan import replay as replay
    from actors.native.compaction.plan import summary_entry as summary_entry
    from actors.native.compaction.plan import turns as turns
    from actors.native.compaction.settings import CompactionConfig as CompactionConfig
    from actors.native.compaction.settings import CompactionMode as CompactionMode
    from actors.native.compaction.sidecar import Sidecar as Sidecar
    from actors.native.compaction.sidecar import SidecarState as SidecarState
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "Calibration": "actors.native.compaction.estimate",
        "canonical_json": "actors.native.compaction.estimate",
        "content_tokens": "actors.native.compaction.estimate",
        "declaration_tokens": "actors.native.compaction.estimate",
        "system_tokens": "actors.native.compaction.estimate",
        "ELIDED": "actors.native.compaction.plan",
        "Decision": "actors.native.compaction.plan",
        "Drop": "actors.native.compaction.plan",
        "Elide": "actors.native.compaction.plan",
        "Entry": "actors.native.compaction.plan",
        "Outcome": "actors.native.compaction.plan",
        "Summary": "actors.native.compaction.plan",
        "compact": "actors.native.compaction.plan",
        "entries": "actors.native.compaction.plan",
        "replay": "actors.native.compaction.plan",
        "summary_entry": "actors.native.compaction.plan",
        "turns": "actors.native.compaction.plan",
        "CompactionConfig": "actors.native.compaction.settings",
        "CompactionMode": "actors.native.compaction.settings",
        "Sidecar": "actors.native.compaction.sidecar",
        "SidecarState": "actors.native.compaction.sidecar",
    })
