"""The event writer's chunks reach the stream in order with what else was
printed there, encoded as the stream encodes, in one write per flush."""
from __future__ import annotations

import io

from gs_cgen.render.output import EventWriter


class _CountingBytes(io.BytesIO):
    writes = 0

    def write(self, data):
        self.writes += 1
        return super().write(data)


def test_chunks_follow_what_was_printed_before_in_one_binary_write():
    raw = _CountingBytes()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace")
    writer = EventWriter("plain", {}, stream=stream)
    stream.write("before\n")
    writer.chunks.extend(["tick 1 \u00e9\n", "tick 2 \udcff\n"])   # a lone surrogate too
    writer.flush()
    stream.write("after\n")
    stream.flush()
    assert raw.getvalue() == "before\ntick 1 \u00e9\ntick 2 \\udcff\nafter\n".encode()
    assert raw.writes == 3 and writer.chunks == []


def test_a_text_only_stream_gets_the_text():
    stream = io.StringIO()
    writer = EventWriter("json", {}, stream=stream)
    writer.chunks.extend(['{"a": 1}\n', '{"a": 2}\n'])
    writer.flush()
    writer.flush()                      # nothing new: nothing written
    assert stream.getvalue() == '{"a": 1}\n{"a": 2}\n'
