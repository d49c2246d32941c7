"""What giving a worktree session's branch a directory of its own adds to a sandboxed spawn
(``actors.sandboxing.reflink``), in interleaved rounds on a real repository.

Run: ``python3 -m tests.bench.bench_sandbox_git [--rounds N]``. Not collected by pytest.

Rows, each the median of the rounds:

* **rules (Landlock layout)**: ``git_rules`` as Landlock gets it (the reference: one
  ``git rev-parse``, the siblings listed);
* **rules, linked**: ``git_rules(redirect=True)`` once the branch is linked (every spawn but the
  first);
* **first link**: ``link`` of a branch whose ref is a plain file (a session's first spawn);
* **bwrap /bin/true**, **bwrap /bin/true, redirected**: bubblewrap with the worktree's plan
  without and with the two redirect binds and the siblings bound read-only into them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from actors.sandboxing.gitrules import GitRules, git_rules
from actors.sandboxing.reflink import link, unlink
from supervisor.sandbox import SandboxPlan, wrap
from tests.actors.workspace.gitrig import git, make_repo

_REF = "refs/heads/corral/mine"


def _timed(run: Callable[[], object], before: Callable[[], object] | None = None) -> float:
    if before is not None:
        before()
    started = time.perf_counter()
    run()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    rounds = parser.parse_args().rounds
    base = Path(tempfile.mkdtemp(prefix="corral-bench-git-", dir="/var/tmp"))
    try:
        repo = make_repo(base / "repo")
        for n in range(3):
            git(repo, "branch", f"corral/other{n}")
        wt = base / "wt"
        git(repo, "worktree", "add", "-q", "-b", "corral/mine", str(wt))
        common = (repo / ".git").resolve()
        flat = git_rules(str(wt))
        linked = git_rules(str(wt), redirect=True)

        def spawn(rules: GitRules) -> Callable[[], object]:
            plan = SandboxPlan(cwd=wt, writable=(wt, *rules.writable), protected=rules.protected,
                               redirects=rules.redirects, read_only=rules.readable)
            argv, _ = wrap(["/bin/true"], {}, plan)
            return lambda: subprocess.run(argv, check=True, env={"PATH": os.environ.get("PATH", "")})

        rows: dict[str, list[float]] = {name: [] for name in (
            "rules (Landlock layout)", "rules, linked", "first link", "bwrap /bin/true",
            "bwrap /bin/true, redirected")}
        for _ in range(rounds):
            rows["rules (Landlock layout)"].append(_timed(lambda: git_rules(str(wt))))
            rows["rules, linked"].append(_timed(lambda: git_rules(str(wt), redirect=True)))
            rows["first link"].append(_timed(lambda: link(common, _REF), lambda: unlink(common, _REF)))
            link(common, _REF)
            rows["bwrap /bin/true"].append(_timed(spawn(flat)))
            rows["bwrap /bin/true, redirected"].append(_timed(spawn(linked)))
        reference = statistics.median(rows["rules (Landlock layout)"])
        print(f"{'path':32} {'median ms':>10} {'p90 ms':>8} {'vs reference':>13}")
        for name, values in rows.items():
            median = statistics.median(values)
            p90 = statistics.quantiles(values, n=10)[-1]
            print(f"{name:32} {median:10.3f} {p90:8.3f} {median - reference:+13.3f}")
    finally:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
