"""Files: reading text with one error message per way it can fail (every reader names the file),
bounded gzip, and the atomic writers every output goes through.

Writers never leave a partial or mixed output: each file is written to a hidden temporary file
beside its target (``.name.<random>.tmp``, mode 0666 minus the umask, as an editor or ``cp`` makes
it) and renamed into place; a set of files (an export) is checked, written, then renamed, and
rolled back to the old files if a rename fails. The targets being written are listed in
:data:`WRITING` while it happens, so an interrupted command can say what it left unchanged.
"""

from __future__ import annotations

import os
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


# -------------------------------------------------------------------------------- atomic writes

#: The outputs a command is writing right now (their temporary files exist), and those it has
#: written: an interrupted command names them.
WRITING: list[Path] = []
WRITTEN: list[Path] = []


def create_temporary(folder: Path, name: str) -> tuple[int, Path]:
    """A new hidden file beside ``name`` in ``folder`` (``.name.<random>.tmp``: globs such as
    ``*.parquet`` never match it), created with mode 0666 minus the umask (0644 by default, as any
    editor or ``cp`` would make it; ``tempfile.mkstemp`` would make it 0600)."""
    import secrets

    for _ in range(100):
        temporary = folder / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {name} in {folder}")


def _write_temporary(folder: Path, name: str, text: str) -> Path:
    """``text`` in a new temporary file beside ``name``, flushed to disk (a full disk fails here)."""
    handle, temporary = create_temporary(folder, name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary


def _refuse_non_file_target(target: Path, option: str) -> None:
    """A target that exists and is not a regular file (a folder, a device) is refused before
    anything is written: renaming over it would fail half-way through a set of files."""
    if (target.exists() or target.is_symlink()) and not target.is_file():
        what = "a folder" if target.is_dir() else "not a regular file"
        raise ValidationError(f"{option} {target}: is {what}; nothing was written (move it away first)")


@contextmanager
def atomic_output(path: Path, option: str = "--output") -> Iterator[Path]:
    """For a writer that creates the file itself (DuckDB's COPY): yields a temporary path beside
    ``path`` to write; on success it is renamed to ``path``, on any failure or interruption removed
    (``path`` unchanged)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ValidationError(f"{option} {path}: the folder {folder} does not exist")
    _refuse_non_file_target(path, option)
    handle, temporary = create_temporary(folder, path.name)
    os.close(handle)
    WRITING.append(path)
    try:
        yield temporary
        os.replace(temporary, path)
        WRITTEN.append(path)
    finally:
        temporary.unlink(missing_ok=True)
        WRITING.remove(path)


def write_document_atomically(path: Path, text: str, option: str = "--output") -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and an atomic rename.

    The file gets mode 0666 minus the umask (0644 by default); a failure leaves ``path`` as it was.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ValidationError(f"{option} {path}: the folder {folder} does not exist")
    write_files_atomically(folder, {path.name: text}, option=option, create_folder=False)


def write_files_atomically(
    folder: Path, files: dict[str, str], *, option: str = "--output-dir", create_folder: bool = True
) -> list[Path]:
    """Write every ``{name: text}`` into ``folder``, all or nothing.

    Every target is checked first (one that is a folder refuses the whole set), every file written
    to a temporary file (so a full disk or a bad permission changes nothing), and only then renamed
    into place, each rename atomic; if a rename still fails, the files already renamed are put
    back as they were (old contents restored from hard links, new files removed). Modes follow the
    umask. Raises ValidationError naming ``option`` and the file.
    """
    folder = Path(folder)
    if not folder.is_dir():
        if not create_folder or folder.exists():
            raise ValidationError(f"{option} {folder}: the folder does not exist")
        try:
            folder.mkdir(parents=True)
        except OSError as exc:
            raise ValidationError(f"{option} {folder}: cannot create it ({exc.strerror or exc})") from None
    for name in files:
        _refuse_non_file_target(folder / name, option)
    written: dict[str, Path] = {}
    saved: dict[Path, Path | None] = {}  # target → a hard link to its old content (None: new file)
    targets = [folder / name for name in files]
    WRITING.extend(targets)
    try:
        for name, text in files.items():
            try:
                written[name] = _write_temporary(folder, name, text)
            except OSError as exc:
                raise ValidationError(
                    f"{option} {folder / name}: not written ({exc.strerror or exc}); nothing was changed"
                ) from None
        try:
            for name, temporary in written.items():
                target = folder / name
                saved[target] = _keep_old(folder, target)
                os.replace(temporary, target)
        except BaseException as exc:
            _restore(saved)
            saved.clear()
            if isinstance(exc, OSError):
                raise ValidationError(
                    f"{option} {target}: not written ({exc.strerror or exc}); the other files were put back "
                    "as they were"
                ) from None
            raise
        WRITTEN.extend(targets)
        return targets
    finally:
        for temporary in written.values():
            temporary.unlink(missing_ok=True)
        for backup in saved.values():
            if backup is not None:
                backup.unlink(missing_ok=True)
        for target in targets:
            WRITING.remove(target)


def _keep_old(folder: Path, target: Path) -> Path | None:
    """A hard link to ``target``'s current content (None when there is none), to restore it."""
    if not target.is_file():
        return None
    handle, backup = create_temporary(folder, target.name)
    os.close(handle)
    backup.unlink()
    try:
        os.link(target, backup)
    except OSError:  # a file system without hard links: copy it
        import shutil

        shutil.copy2(target, backup)
    return backup


def _restore(saved: dict[Path, Path | None]) -> None:
    """Undo the renames of an interrupted set: old contents back, new files removed."""
    for target, backup in saved.items():
        try:
            if backup is None:
                target.unlink(missing_ok=True)
            else:
                # (a rename between two links of one file does nothing: the target was not replaced)
                os.replace(backup, target)
                backup.unlink(missing_ok=True)
        except OSError:
            pass
