"""Read a BPF ring buffer map (BPF_MAP_TYPE_RINGBUF) through its mmap'ed
pages, many records per wake-up, with no callback per record.

The protocol is the kernel's (kernel/bpf/ringbuf.c; libbpf's ringbuf.c is
the reference consumer):

- page 0 of the map fd holds `consumer_pos`, which only we write;
- from page 1 on, read-only: `producer_pos`, then one page later the data
  area, `size` bytes (a power of two) mapped twice in a row, so a record
  that wraps around the end is still contiguous;
- a record is an 8-byte header (u32 `len` with the BUSY bit set while the
  producer still owns it and the DISCARD bit set for a dropped reservation,
  u32 page offset) and then `len` bytes, rounded up to 8 bytes in all.

We read records from `consumer_pos` up to `producer_pos` and stop at the
first BUSY one: records after it may be complete, but the space cannot be
given back past a record still being written. Advancing `consumer_pos`
gives the space back. x86-64 orders loads with loads and stores with
earlier loads (TSO), which is what the kernel's acquire/release pairs need
from us. Positions and lengths are read and written in native format
(`@`): struct copies those with one aligned load or store, where the
byte-order-explicit formats may go byte by byte and tear.
"""
from __future__ import annotations

import mmap
import select
import struct
from typing import Callable

BUSY_BIT = 1 << 31
DISCARD_BIT = 1 << 30
HEADER_SIZE = 8

# (buffer, offset, size, end): the record's bytes are buffer[offset:offset +
# size]; `end` is the ring position just past it, for release().
Record = tuple[object, int, int, int]

_FLAGS = BUSY_BIT | DISCARD_BIT
_PADDED = HEADER_SIZE + 7             # a record's length + this, rounded down to 8
_LENGTH = struct.Struct("@I")
_POSITION = struct.Struct("@Q")


class RingBufferReader:
    """Consumer side of one BPF ring buffer.

    `positions` is the writable consumer page, `ring` the producer page
    followed by the doubly-mapped data area, `size` the data area's size.
    `open(map_fd, size)` maps a real one; tests pass bytearrays."""

    def __init__(self, positions, ring, size: int, page_size: int = mmap.PAGESIZE,
                 wait: Callable[[int], None] | None = None) -> None:
        if size & (size - 1):
            raise ValueError(f"ring buffer size {size} is not a power of two")
        self._positions = positions
        self.buffer = ring
        self._data_start = page_size
        self._mask = size - 1
        self._wait = wait or (lambda timeout_ms: None)
        self._maps: tuple = ()

    @classmethod
    def open(cls, map_fd: int, size: int) -> "RingBufferReader":
        page = mmap.PAGESIZE
        positions = mmap.mmap(map_fd, page, mmap.MAP_SHARED,
                              mmap.PROT_READ | mmap.PROT_WRITE, offset=0)
        ring = mmap.mmap(map_fd, page + 2 * size, mmap.MAP_SHARED, mmap.PROT_READ, offset=page)
        # The map fd is readable (EPOLLIN) while records wait; the kernel
        # wakes us only when a record lands where we have read up to.
        poller = select.epoll()
        poller.register(map_fd, select.EPOLLIN)
        reader = cls(positions, ring, size, page, lambda timeout_ms: poller.poll(timeout_ms / 1000))
        reader._maps = (positions, ring, poller)
        return reader

    def poll(self, timeout_ms: int, limit: int) -> list[Record]:
        """The complete records ready to read, at most `limit`; when none is
        ready, wait up to `timeout_ms` for one first."""
        records = self.read(limit)
        if not records:
            self._wait(timeout_ms)
            records = self.read(limit)
        return records

    def read(self, limit: int) -> list[Record]:
        """Every complete record from the consumer position on (at most
        `limit`), left in place: `release(record end)` gives their space
        back once they are handled."""
        position = _POSITION.unpack_from(self._positions, 0)[0]
        buffer, start, mask = self.buffer, self._data_start, self._mask
        producer = _POSITION.unpack_from(buffer, 0)[0]
        records: list[Record] = []
        append, unpack = records.append, _LENGTH.unpack_from
        for _ in range(limit):
            if position >= producer:
                producer = _POSITION.unpack_from(buffer, 0)[0]   # more since?
                if position >= producer:
                    break
            at = start + (position & mask)
            length = unpack(buffer, at)[0]
            if length & _FLAGS:
                if length & BUSY_BIT:
                    break
                # Discarded: nothing to hand on; its space goes back with
                # the next release, or now when nothing was read before it.
                position += (length - DISCARD_BIT + _PADDED) & ~7
                if not records:
                    self.release(position)
                continue
            position += (length + _PADDED) & ~7
            append((buffer, at + HEADER_SIZE, length, position))
        return records

    def release(self, end: int) -> None:
        """Give back the space of every record up to position `end` (a
        record's last field)."""
        _POSITION.pack_into(self._positions, 0, end)

    def close(self) -> None:
        """Unmap; the reader is unusable afterwards."""
        self._positions = self.buffer = None
        for resource in self._maps:
            resource.close()
        self._maps = ()
