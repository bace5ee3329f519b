"""The offset map: records completed above the committed offset, packed into commit metadata.

Kafka keeps a metadata string with each committed offset (``offset.metadata.max.bytes``,
4096 by default). The engine commits the first unfinished offset ``base`` and writes the
offsets already completed above it here, so a restart can skip them.

Text form: ``lgl1:`` + URL-safe base64 of ``varint(base)``, one kind byte, then either

* ``R`` run lengths: varints ``gap, run, gap, run, ...`` from ``base + 1`` (a gap of not
  completed offsets, then a run of completed ones), or
* ``B`` a bitmap: bit ``i`` (LSB first) set when ``base + 1 + i`` is completed,

whichever is shorter. When even the shorter one exceeds the limit, the tail is dropped (those
records are simply re-run after a restart), never the limit exceeded.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable

PREFIX = "lgl1:"
LIMIT = 4096
RUNS = ord("R")
BITMAP = ord("B")


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _runs(base: int, offsets: list[int]) -> list[tuple[int, int]]:
    """(gap, run) pairs from ``base + 1`` over sorted offsets above ``base``."""
    pairs: list[tuple[int, int]] = []
    cursor = base + 1
    i = 0
    while i < len(offsets):
        start = offsets[i]
        end = start
        while i + 1 < len(offsets) and offsets[i + 1] == end + 1:
            i += 1
            end += 1
        pairs.append((start - cursor, end - start + 1))
        cursor = end + 1
        i += 1
    return pairs


def _max_payload(limit: int) -> int:
    """Bytes that fit in ``limit`` characters once prefixed and base64-encoded."""
    return max(0, (limit - len(PREFIX)) // 4 * 3)


def _runs_payload(head: bytes, pairs: list[tuple[int, int]], room: int) -> tuple[bytes, int]:
    """The longest run-length payload within ``room`` bytes and the offsets it keeps."""
    out = bytearray(head)
    out.append(RUNS)
    kept = 0
    for gap, run in pairs:
        piece = _varint(gap) + _varint(run)
        if len(out) + len(piece) > room:
            break
        out += piece
        kept += run
    return bytes(out), kept


def _bitmap_payload(head: bytes, base: int, offsets: list[int], room: int) -> tuple[bytes, int]:
    """The bitmap payload truncated to ``room`` bytes and the offsets it keeps."""
    span = offsets[-1] - base if offsets else 0
    size = min((span + 7) // 8, max(0, room - len(head) - 1))
    bits = bytearray(size)
    kept = 0
    for offset in offsets:
        index = offset - base - 1
        if index // 8 >= size:
            break
        bits[index // 8] |= 1 << (index % 8)
        kept += 1
    return bytes(head) + bytes([BITMAP]) + bytes(bits), kept


def encode(base: int, completed: Iterable[int], limit: int = LIMIT) -> str:
    """Metadata text for committed offset ``base`` and the ``completed`` offsets above it.

    Offsets at or below ``base`` are ignored. The result never exceeds ``limit`` characters.
    """
    if base < 0:
        raise ValueError("base offset must be >= 0")
    offsets = sorted({o for o in completed if o > base})
    if not offsets:
        return ""
    room = _max_payload(limit)
    head = _varint(base)
    if len(head) + 1 > room:
        return ""
    runs, runs_kept = _runs_payload(head, _runs(base, offsets), room)
    bitmap, bitmap_kept = _bitmap_payload(head, base, offsets, room)
    kept, _, best = max((runs_kept, -len(runs), runs), (bitmap_kept, -len(bitmap), bitmap))
    if not kept:
        return ""
    return PREFIX + base64.urlsafe_b64encode(best).decode("ascii")


def decode(text: str | None) -> tuple[int, frozenset[int]] | None:
    """(base, completed offsets) from metadata text; None if empty or not an offset map."""
    if not text or not text.startswith(PREFIX):
        return None
    try:
        data = base64.urlsafe_b64decode(text[len(PREFIX) :].encode("ascii"))
        base, pos = _read_varint(data, 0)
        if pos >= len(data):
            return None
        kind = data[pos]
        pos += 1
        completed: set[int] = set()
        if kind == RUNS:
            cursor = base + 1
            while pos < len(data):
                gap, pos = _read_varint(data, pos)
                run, pos = _read_varint(data, pos)
                cursor += gap
                completed.update(range(cursor, cursor + run))
                cursor += run
        elif kind == BITMAP:
            for index, byte in enumerate(data[pos:]):
                for bit in range(8):
                    if byte & (1 << bit):
                        completed.add(base + 1 + index * 8 + bit)
        else:
            return None
    except (ValueError, binascii.Error, UnicodeEncodeError):
        return None
    return base, frozenset(completed)
