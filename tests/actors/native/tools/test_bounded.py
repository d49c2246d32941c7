"""Head+tail capture and text clipping keep both ends, mark the gap, and stay bounded."""

from __future__ import annotations

from actors.native.tools.bounded import HeadTail, clip


def test_head_tail_keeps_both_ends_and_bounded_memory() -> None:
    sink = HeadTail(10, 10)
    sink.write(b"HEAD------")
    for _ in range(10_000):
        sink.write(b"x" * 100)
        assert sink.retained <= 10 + 2 * 10
    sink.write(b"------TAIL")
    assert sink.total == 1_000_020 and sink.elided == 1_000_000
    assert sink.text() == "HEAD------\n[… 1000000 bytes elided …]\n------TAIL"


def test_head_tail_below_its_bounds_is_verbatim() -> None:
    sink = HeadTail(4, 4)
    sink.write(b"abc")
    sink.write(b"defgh")
    assert (sink.text(), sink.elided) == ("abcdefgh", 0)


def test_tail_starts_on_a_character_boundary() -> None:
    sink = HeadTail(0, 5)
    sink.write(("x" * 20 + "ééé").encode())  # the last 5 bytes start inside an é
    assert sink.text() == "\n[… 21 bytes elided …]\néé"  # the cut continuation byte is dropped


def test_clip_keeps_head_and_tail_within_the_limit() -> None:
    text = "start " + "y" * 10_000 + " end"
    clipped, cut = clip(text, 500)
    assert cut and clipped.startswith("start ") and clipped.endswith(" end")
    assert "bytes elided …]" in clipped and len(clipped.encode()) <= 500
    assert clip("short", 500) == ("short", False)
