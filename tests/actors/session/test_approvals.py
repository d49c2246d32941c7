"""Permission bookkeeping: policy answers, deadlines, one decision per id."""

from __future__ import annotations

import pytest

from actors.session.approvals import Approvals
from actors.session.policy import Policy
from protocol import events as ev
from protocol.errors import AlreadyDecided, UnknownPermission
from protocol.models import Permissions


def _request(pid: str, tool: str = "bash") -> ev.Permission:
    return ev.Permission(permission_id=pid, tool=tool, kind="exec")


def test_policy_answers_need_no_deadline() -> None:
    book = Approvals(Policy(Permissions(allow_tools=["safe*"])), timeout=60)
    assert book.open(_request("p1", "safe_tool"), now=0) == "allow"
    assert book.next_deadline() is None
    assert book.settle("p1") is True
    assert not book


def test_client_requests_time_out_in_order() -> None:
    book = Approvals(Policy(Permissions()), timeout=60)
    assert book.open(_request("p1"), now=10) is None
    assert book.open(_request("p2"), now=20) is None
    assert book and book.open_ids() == ["p1", "p2"]
    assert book.next_deadline() == 70
    assert book.expired(69.9) == [] and book.expired(70) == ["p1"]
    book.settle("p1")
    assert book.next_deadline() == 80 and book.open_ids() == ["p2"]


def test_each_id_is_decided_once() -> None:
    book = Approvals(Policy(Permissions()), timeout=60)
    with pytest.raises(UnknownPermission):
        book.check("p9", "allow")
    book.open(_request("p1"), now=0)
    book.check("p1", "allow_always")
    assert book.settle("p1") is True
    with pytest.raises(AlreadyDecided):
        book.check("p1", "deny")
    assert book.settle("p1") is False  # a repeat settles nothing
    # allow_always was remembered: the same tool is now answered by the policy.
    assert book.open(_request("p2"), now=1) == "allow"
