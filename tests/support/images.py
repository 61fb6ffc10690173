"""Real image bytes made here, so the tests need no binary fixtures: a valid PNG
(signature, IHDR, one zlib-compressed IDAT, IEND, every chunk with its CRC), which any
decoder opens, plus the first bytes of the other kinds."""

from __future__ import annotations

import base64
import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def png(width: int = 3, height: int = 2, *, noise: bool = False) -> bytes:
    """An RGB PNG of ``width`` x ``height``; ``noise`` makes it incompressible (large)."""
    rows = bytearray()
    seed = 12345
    for y in range(height):
        rows.append(0)  # filter: none
        for x in range(width):
            if noise:
                seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
                rows += seed.to_bytes(4, "little")[:3]
            else:
                rows += bytes((x * 40 % 256, y * 60 % 256, 128))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(bytes(rows)))
        + _chunk(b"IEND", b"")
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


GIF_HEADER = b"GIF89a" + struct.pack("<HH", 7, 5) + b"\x00\x00\x00"
JPEG_HEADER = (
    b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    + b"\xff\xc0\x00\x11\x08"
    + struct.pack(">HH", 480, 640)
    + b"\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01"
)
WEBP_HEADER = b"RIFF\x00\x00\x00\x00WEBPVP8X" + b"\x0a\x00\x00\x00" + b"\x00" * 4
WEBP_HEADER += (99).to_bytes(3, "little") + (49).to_bytes(3, "little")
