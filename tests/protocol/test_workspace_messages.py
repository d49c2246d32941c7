"""Golden wire forms of the workspace additions: old frames still decode, new ones are pinned."""

from __future__ import annotations

import json

import msgspec

from protocol import codec, events, messages, models


def _wire(message: msgspec.Struct) -> object:
    return json.loads(codec.encode(message))


def test_session_create_without_workspace_still_decodes_and_means_none() -> None:
    old = b'{"type":"session.create","id":1,"harness":"fake","cwd":"/w"}'
    request = codec.decode_request(old)
    assert isinstance(request, messages.SessionCreate) and request.workspace is None


def test_session_create_with_a_worktree() -> None:
    frame = (b'{"type":"session.create","id":1,"harness":"fake","cwd":"/w",'
             b'"workspace":{"mode":"worktree","base":"main","branch":"try/x"}}')
    request = codec.decode_request(frame)
    assert isinstance(request, messages.SessionCreate)
    assert request.workspace == models.WorkspaceSpec(mode="worktree", base="main", branch="try/x")


def test_workspace_requests_golden() -> None:
    assert codec.decode_request(b'{"type":"workspace.diff","id":2,"session_id":"s-1"}') == \
        messages.WorkspaceDiff(id=2, session_id="s-1", stat=False)
    assert codec.decode_request(b'{"type":"workspace.merge","id":3,"session_id":"s-1"}') == \
        messages.WorkspaceMerge(id=3, session_id="s-1", strategy="merge")
    assert codec.decode_request(
        b'{"type":"workspace.commit","id":4,"session_id":"s-1","message":"m"}') == \
        messages.WorkspaceCommit(id=4, session_id="s-1", message="m")
    assert codec.decode_request(
        b'{"type":"workspace.discard","id":5,"session_id":"s-1","force":true}') == \
        messages.WorkspaceDiscard(id=5, session_id="s-1", force=True)


def test_diff_result_and_workspace_event_golden() -> None:
    result = messages.DiffResult(diff="d", files=[models.FileChange(
        path="a.txt", status="added", added=1, removed=0)], truncated=False)
    assert _wire(result) == {"diff": "d", "truncated": False, "files": [
        {"path": "a.txt", "status": "added", "added": 1, "removed": 0}]}
    event = events.Workspace(state="created", branch="corral/x", path="/wt", changed_files=0)
    assert _wire(event) == {"type": "workspace", "state": "created", "branch": "corral/x",
                            "path": "/wt", "changed_files": 0}


def test_session_info_carries_repo_and_workspace_as_null_by_default() -> None:
    info = models.SessionInfo(id="s-1", name=None, harness="fake", cwd="/w", model=None,
                              state="idle", created_at="t", last_seq=0, restarts=0, pid=None)
    wire = _wire(info)
    assert isinstance(wire, dict) and wire["repo"] is None and wire["workspace"] is None
