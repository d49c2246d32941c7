"""The command line's plain-text tables: aligned columns, the sessions table, short durations."""

from __future__ import annotations

from protocol.models import ChildProcess, SessionInfo

__all__ = ["child_rows", "duration", "session_rows", "table"]


def table(rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def session_rows(sessions: list[SessionInfo]) -> list[list[str]]:
    """One row per session; BRANCH and CHANGED (files) columns when any session has a worktree,
    NODE when any was placed on a cluster node."""
    rows = [["ID", "HARNESS", "STATE", "SEQ", "CREATED", "NAME"]]
    rows += [[s.id, s.harness, s.state, str(s.last_seq), s.created_at, s.name or "-"]
             for s in sessions]
    if any(s.workspace is not None for s in sessions):
        rows[0] += ["BRANCH", "CHANGED"]
        for row, s in zip(rows[1:], sessions):
            space = s.workspace
            row += ["-", "-"] if space is None else [
                space.branch if space.state == "active" else f"{space.branch} ({space.state})",
                str(space.changed_files)]
    if any(s.placement is not None for s in sessions):
        rows[0].append("NODE")
        for row, s in zip(rows[1:], sessions):
            row.append("-" if s.placement is None else f"{s.placement.node_ip} ({s.placement.node_id[:8]})")
    return rows


def child_rows(children: list[ChildProcess]) -> list[list[str]]:
    """One row per live child of the daemon; a NODE column when any runs on a cluster node."""
    rows = [["KEY", "KIND", "PID"], *([c.key, c.kind, str(c.pid)] for c in children)]
    if any(c.node_id is not None for c in children):
        rows[0].append("NODE")
        for row, child in zip(rows[1:], children):
            row.append(child.node_id or "-")
    return rows


def duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"
