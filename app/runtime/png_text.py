"""PNG files at the chunk level, with the standard library only (zlib + struct): read the text chunks
(tEXt, zTXt, iTXt), put tEXt chunks into an image, and draw a plain placeholder image.

Character cards travel as PNG images whose text chunks hold the card (app/runtime/cards.py). Every chunk's
CRC is checked, and decompression is bounded, so a damaged or hostile file is refused with one line.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"
TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")
MAX_TEXT_BYTES = 64 * 1024 * 1024  # an inflated zTXt / iTXt may not grow beyond this


class PngError(ValueError):
    """A file that is not a readable PNG, explained in one line."""


@dataclass(frozen=True, slots=True)
class Chunk:
    kind: bytes  # b"IHDR", b"tEXt"...
    data: bytes


def read_chunks(raw: bytes) -> list[Chunk]:
    """The chunks of a PNG, from IHDR to IEND (anything after IEND is ignored). Raises PngError."""
    if not raw.startswith(SIGNATURE):
        raise PngError("not a PNG (it does not start with the PNG signature)")
    chunks: list[Chunk] = []
    offset = len(SIGNATURE)
    while True:
        if offset + 8 > len(raw):
            raise PngError("damaged PNG: it ends before its IEND chunk")
        length, kind = struct.unpack(">I4s", raw[offset : offset + 8])
        if length > 2**31 - 1 or not kind.isalpha():
            raise PngError(f"damaged PNG: a malformed chunk header at byte {offset}")
        end = offset + 8 + length
        if end + 4 > len(raw):
            raise PngError(f"damaged PNG: the {_name(kind)} chunk is cut short")
        data = raw[offset + 8 : end]
        (crc,) = struct.unpack(">I", raw[end : end + 4])
        if zlib.crc32(kind + data) != crc:
            raise PngError(f"damaged PNG: the {_name(kind)} chunk fails its checksum")
        if not chunks and kind != b"IHDR":
            raise PngError("damaged PNG: it does not begin with an IHDR chunk")
        chunks.append(Chunk(kind, data))
        offset = end + 4
        if kind == b"IEND":
            return chunks


def text_of(chunk: Chunk) -> tuple[str, str]:
    """(keyword, text) of a tEXt, zTXt or iTXt chunk. Raises PngError if it is malformed."""
    keyword, sep, rest = chunk.data.partition(b"\0")
    if not sep or not 1 <= len(keyword) <= 79:
        raise PngError(f"damaged PNG: a {_name(chunk.kind)} chunk without a keyword")
    name = keyword.decode("latin-1")
    if chunk.kind == b"tEXt":
        return name, rest.decode("latin-1")
    if chunk.kind == b"zTXt":
        if rest[:1] != b"\0":
            raise PngError(f"the {name!r} zTXt chunk uses an unknown compression method")
        return name, _inflate(rest[1:], name).decode("latin-1")
    if len(rest) < 2:
        raise PngError(f"damaged PNG: the {name!r} iTXt chunk is cut short")
    compressed, method = rest[0], rest[1]
    parts = rest[2:].split(b"\0", 2)  # language tag, translated keyword, text
    if len(parts) != 3:
        raise PngError(f"damaged PNG: the {name!r} iTXt chunk is cut short")
    body = parts[2]
    if compressed:
        if method != 0:
            raise PngError(f"the {name!r} iTXt chunk uses an unknown compression method")
        body = _inflate(body, name)
    try:
        return name, body.decode("utf-8")
    except UnicodeDecodeError:
        raise PngError(f"the {name!r} iTXt chunk is not UTF-8 text") from None


def text_chunk(keyword: str, text: str) -> Chunk:
    """A tEXt chunk (keyword and text in Latin-1; a card's base64 text always is)."""
    return Chunk(b"tEXt", keyword.encode("latin-1") + b"\0" + text.encode("latin-1"))


def write_png(chunks: list[Chunk]) -> bytes:
    parts = [SIGNATURE]
    for chunk in chunks:
        parts.append(struct.pack(">I4s", len(chunk.data), chunk.kind))
        parts.append(chunk.data)
        parts.append(struct.pack(">I", zlib.crc32(chunk.kind + chunk.data)))
    return b"".join(parts)


def with_text(image: list[Chunk], texts: list[tuple[str, str]], *, drop: tuple[str, ...] = ()) -> bytes:
    """The image with `texts` as tEXt chunks just before IEND, and without its text chunks whose keyword is
    in `drop` (compared without case)."""
    lowered = {keyword.lower() for keyword in drop}
    kept = [c for c in image if not (c.kind in TEXT_CHUNKS and _keyword(c).lower() in lowered)]
    end = next(i for i, c in enumerate(kept) if c.kind == b"IEND")
    return write_png([*kept[:end], *(text_chunk(k, t) for k, t in texts), *kept[end:]])


def placeholder(seed: str, width: int = 400, height: int = 600) -> list[Chunk]:
    """A plain image (a vertical gradient between two colours picked from `seed`) for a card without one.
    400x600 is the portrait size SillyTavern gives its avatars."""
    digest = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).digest()
    top = [64 + digest[i] // 2 for i in range(3)]
    bottom = [digest[3 + i] // 4 for i in range(3)]
    rows = []
    for y in range(height):
        pixel = bytes(round(t + (b - t) * y / max(1, height - 1)) for t, b in zip(top, bottom, strict=True))
        rows.append(b"\0" + pixel * width)  # filter type 0 (none) per row
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return [Chunk(b"IHDR", header), Chunk(b"IDAT", zlib.compress(b"".join(rows), 9)), Chunk(b"IEND", b"")]


def _keyword(chunk: Chunk) -> str:
    return chunk.data.partition(b"\0")[0].decode("latin-1")


def _inflate(data: bytes, name: str) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, MAX_TEXT_BYTES)
    except zlib.error:
        raise PngError(f"the {name!r} text chunk's compressed data is damaged") from None
    if inflater.unconsumed_tail:
        raise PngError(f"the {name!r} text chunk inflates beyond {MAX_TEXT_BYTES // 2**20} MB")
    return out


def _name(kind: bytes) -> str:
    return kind.decode("latin-1")


__all__ = [
    "SIGNATURE",
    "TEXT_CHUNKS",
    "Chunk",
    "PngError",
    "placeholder",
    "read_chunks",
    "text_chunk",
    "text_of",
    "with_text",
    "write_png",
]
