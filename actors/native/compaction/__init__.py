"""Deterministic context compaction for native sessions (plasmid's, with resolute's summaries).

Pure (no ADK, no I/O but the sidecar file): ``estimate`` (the fixture-pinned estimator and its
calibration), ``settings`` (``[native.compaction]``), ``plan`` (what to elide or drop, and the
replay of earlier decisions), ``sidecar`` (the decisions on disk). The worker's ADK glue is
``actors.native.worker.compactor``.
"""

from .estimate import Calibration as Calibration
from .estimate import canonical_json as canonical_json
from .estimate import content_tokens as content_tokens
from .estimate import declaration_tokens as declaration_tokens
from .estimate import system_tokens as system_tokens
from .plan import ELIDED as ELIDED
from .plan import Decision as Decision
from .plan import Drop as Drop
from .plan import Elide as Elide
from .plan import Entry as Entry
from .plan import Outcome as Outcome
from .plan import Summary as Summary
from .plan import compact as compact
from .plan import entries as entries
from .plan import replay as replay
from .plan import summary_entry as summary_entry
from .plan import turns as turns
from .settings import CompactionConfig as CompactionConfig
from .settings import CompactionMode as CompactionMode
from .sidecar import Sidecar as Sidecar
from .sidecar import SidecarState as SidecarState
