"""The BPF ring buffer consumer (runtime/ringbuf.py) on a ring laid out in
bytearrays as the kernel lays out the map's pages: consumer page; producer
page, then the data area mapped twice in a row."""
from __future__ import annotations

import struct

from gs_cgen.runtime.ringbuf import BUSY_BIT, DISCARD_BIT, RingBufferReader

PAGE = 4096
SIZE = 4096                   # data area: a power of two


class FakeRing:
    """The producer side, as bpf_ringbuf_reserve/submit/discard write it."""

    def __init__(self) -> None:
        self.positions = bytearray(PAGE)
        self.ring = bytearray(PAGE + 2 * SIZE)
        self.producer = 0

    def write(self, data: bytes, flags: int = 0) -> int:
        """Append a record; returns its position (to flip flags later)."""
        position = self.producer
        record = struct.pack("<II", len(data) | flags, 0) + data
        record += b"\0" * (-len(record) % 8)
        for i, byte in enumerate(record):       # both mappings see the same page
            at = (position + i) % SIZE
            self.ring[PAGE + at] = self.ring[PAGE + SIZE + at] = byte
        self.producer += len(record)
        struct.pack_into("<Q", self.ring, 0, self.producer)
        return position

    def set_length_word(self, position: int, data_len: int, flags: int) -> None:
        for base in (PAGE, PAGE + SIZE):
            struct.pack_into("<I", self.ring, base + position % SIZE, data_len | flags)

    @property
    def consumer(self) -> int:
        return struct.unpack_from("<Q", self.positions, 0)[0]

    def reader(self) -> RingBufferReader:
        return RingBufferReader(self.positions, self.ring, SIZE, PAGE)


def payloads(records) -> list[bytes]:
    return [bytes(buffer[offset:offset + size]) for buffer, offset, size, _ in records]


def test_records_are_read_in_order_and_released_up_to_the_last_handled():
    fake = FakeRing()
    for text in (b"one", b"second!!", b"3"):
        fake.write(text)
    reader = fake.reader()
    records = reader.read(100)
    assert payloads(records) == [b"one", b"second!!", b"3"]
    assert fake.consumer == 0                   # nothing given back before release
    reader.release(records[1][3])
    assert fake.consumer == 8 + 8 + 8 + 8       # "one" padded to 8, "second!!" is 8
    assert payloads(reader.read(100)) == [b"3"]


def test_a_record_that_wraps_around_the_end_is_contiguous():
    fake = FakeRing()
    reader = fake.reader()
    filler = b"x" * (SIZE - 8 - 16)             # leaves 16 bytes before the end
    fake.write(filler)
    reader.release(reader.read(10)[-1][3])
    fake.write(b"A" * 40)                       # 8-byte header + 40: crosses the end
    assert payloads(reader.read(10)) == [b"A" * 40]


def test_reading_stops_at_a_record_still_being_written():
    fake = FakeRing()
    fake.write(b"done")
    busy = fake.write(b"busy", BUSY_BIT)
    fake.write(b"after")
    reader = fake.reader()
    assert payloads(reader.read(10)) == [b"done"]
    fake.set_length_word(busy, 4, 0)            # submitted
    reader.release(reader.read(10)[0][3])
    assert payloads(reader.read(10)) == [b"busy", b"after"]


def test_discarded_records_are_skipped_and_their_space_given_back():
    fake = FakeRing()
    fake.write(b"gone", DISCARD_BIT)
    fake.write(b"kept")
    fake.write(b"gone too", DISCARD_BIT)
    reader = fake.reader()
    records = reader.read(10)
    assert payloads(records) == [b"kept"]
    assert fake.consumer == 16                  # the leading discard, at once
    reader.release(records[-1][3])
    assert reader.read(10) == [] and fake.consumer == fake.producer


def test_at_most_limit_records_per_read():
    fake = FakeRing()
    for i in range(10):
        fake.write(bytes([i]) * 3)
    reader = fake.reader()
    first = reader.read(4)
    assert payloads(first) == [bytes([i]) * 3 for i in range(4)]
    reader.release(first[-1][3])
    assert len(reader.read(100)) == 6


def test_poll_waits_only_when_nothing_is_ready():
    fake = FakeRing()
    waits = []

    def wait(timeout_ms):
        waits.append(timeout_ms)
        fake.write(b"late")
    reader = RingBufferReader(fake.positions, fake.ring, SIZE, PAGE, wait)
    assert payloads(reader.poll(100, 10)) == [b"late"] and waits == [100]
    assert payloads(reader.poll(100, 10)) == [b"late"] and waits == [100]   # not released yet
