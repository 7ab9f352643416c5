"""Reading a text file with one error message per way it can fail (every reader names the file)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fleetopt.errors import ValidationError


def read_text(path: Path, label: str = "") -> str:
    """The file's text (UTF-8, a BOM dropped); ValidationError naming ``label`` + the path when it is
    missing, unreadable or not UTF-8."""
    where = f"{label}{path}"
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ValidationError(f"{where}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{where}: not UTF-8 text (byte {exc.start:,}); save it as UTF-8") from None
    except OSError as exc:
        raise ValidationError(f"{where}: cannot be read ({exc.strerror or exc})") from None


@contextmanager
def long_csv_fields() -> Iterator[None]:
    """Within the block, Python's csv module reads fields of any length (its default limit,
    131,072 characters, raises ``csv.Error`` on a long prompt column or a garbled token field: an
    internal error, not a message). The file's own size bounds the field."""
    import csv

    previous = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


#: The most a gzip-compressed input may expand: text logs compress 3–15× (JSON lines up to ~30×),
#: while gzip's own limit is about 1,032×, which only repetitive filler reaches (a "gzip bomb").
MAX_GZIP_RATIO = 100
#: Compressed bytes read (and decompressed) at a time.
_GZIP_CHUNK = 1 << 20


def gunzip_checked(path: Path, data: bytes | None = None) -> bytes | int:
    """The decompressed content of a gzip file (``data``: its bytes, already read), or — without
    ``data`` — only its decompressed size, streaming. Either way a ValidationError naming the
    file when it expands more than :data:`MAX_GZIP_RATIO` times its compressed size (checked as
    it is decompressed, so a bomb stops within that bound), or is not valid gzip. Concatenated
    members are read as one stream, as gzip does."""
    import io
    import zlib

    size = path.stat().st_size if data is None else len(data)
    limit = MAX_GZIP_RATIO * max(size, 1 << 16)
    out = bytearray() if data is not None else None
    total = 0
    stream = open(path, "rb") if data is None else io.BytesIO(data)  # noqa: SIM115 - closed below
    try:
        decompressor, pending = None, stream.read(_GZIP_CHUNK)
        while True:
            if decompressor is None:  # between members: skip zero padding, start the next one
                pending = pending.lstrip(b"\x00")
                while not pending:
                    pending = stream.read(_GZIP_CHUNK).lstrip(b"\x00")
                    if not pending and stream.read(1) == b"":
                        break
                if not pending:
                    break
                decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
            if not pending:
                raise ValidationError(f"{path}: not a valid gzip file (it ends in the middle of its data)")
            piece = decompressor.decompress(pending, limit + 1 - total)
            total += len(piece)
            if out is not None:
                out += piece
            if total > limit:
                raise ValidationError(
                    f"{path}: the gzip file expands more than {MAX_GZIP_RATIO}× its {size:,} bytes (past "
                    f"{limit:,} bytes): a decompression bomb or filler, not a request log; fleetopt does "
                    "not read it"
                )
            if decompressor.unconsumed_tail:
                pending = decompressor.unconsumed_tail
            elif decompressor.eof:
                pending, decompressor = decompressor.unused_data, None
            else:
                pending = stream.read(_GZIP_CHUNK)
    except zlib.error as exc:
        raise ValidationError(f"{path}: not a valid gzip file ({exc})") from None
    finally:
        stream.close()
    return bytes(out) if out is not None else total
