"""Uploaded docs archives (.zip, .tar.gz): checked whole before anything is unpacked, then unpacked
with every entry's size bounded.

Rejected, with one line per offending entry in the report: entries whose path escapes the root
(absolute, ``..``, a drive or backslash path), symlinks and hard links, device files and FIFOs,
names no file system takes (a part over 255 bytes), a file that is also a folder or comes twice,
zip entries whose local header names another file than the directory, more entries than
``max_archive_entries``, more unpacked bytes than ``max_unpacked_bytes``, and an archive (or one
entry) that unpacks to more than ``max_compression_ratio`` times its packed size (zip bombs).

The check is bounded whatever the archive declares: a zip's sizes are read from its directory
(nothing is decompressed); a tar.gz is read as a stream that stops at the first header whose size
breaks a limit, so a bomb's data is never inflated, and the stream itself is cut off past the
limits or after ``max_archive_inspect_s``.
"""

from __future__ import annotations

import gzip
import io
import shutil
import stat
import tarfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import config


class ArchiveRejected(ValueError):
    """The archive is unsafe or unreadable; ``problems`` lists why, entry by entry. Nothing was changed."""

    def __init__(self, summary: str, problems: list[str]) -> None:
        super().__init__(summary + (": " + "; ".join(problems[:5]) if problems else ""))
        self.summary = summary
        self.problems = problems


SMALL_BYTES = 1_000_000  # an archive (or entry) unpacking to less than this is never taken for a bomb, whatever its ratio
MAX_NAME_PART_BYTES = 255  # a file or folder name longer than this is refused by Linux, macOS and Windows file systems
MAX_NAME_BYTES = 1024  # a whole relative path; the upload folder under CITEDOCS_HOME comes before it
TAR_HEADER_SLACK = 2048  # stream bytes of one tar member beside its data: header, long-name header, padding


@dataclass(frozen=True)
class Limits:
    max_entries: int
    max_unpacked_bytes: int
    max_ratio: float
    max_seconds: float = 20.0

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(
            config.setting("max_archive_entries"),
            config.setting("max_unpacked_bytes"),
            config.setting("max_compression_ratio"),
            config.setting("max_archive_inspect_s"),
        )

    def unpacked_budget(self, packed: int) -> int:
        """The most bytes an archive of ``packed`` bytes may unpack to: the byte limit and the ratio's."""
        return int(min(self.max_unpacked_bytes, max(SMALL_BYTES, self.max_ratio * packed)))


@dataclass
class ArchiveReport:
    kind: str  # zip | tar.gz
    entries: int = 0
    files: int = 0
    unpacked_bytes: int = 0
    problems: list[str] = field(default_factory=list)


def _unsafe_name(name: str) -> str | None:
    """Why an entry name may not be unpacked, or None."""
    if not name or "\x00" in name:
        return "empty or NUL in the name"
    if "\\" in name or (len(name) > 1 and name[1] == ":"):
        return "a Windows path (backslash or drive letter)"
    path = PurePosixPath(name)
    if path.is_absolute():
        return "an absolute path, outside the root"
    if ".." in path.parts:
        return "'..' escapes the root"
    if any(len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_PART_BYTES for part in path.parts):
        return f"a file or folder name longer than {MAX_NAME_PART_BYTES} bytes, which no file system takes"
    if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        return f"a path longer than {MAX_NAME_BYTES} bytes"
    return None


def _kind(data: bytes) -> str:
    if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        return "zip"
    if data[:2] == b"\x1f\x8b":
        return "tar.gz"
    raise ArchiveRejected("not a .zip or .tar.gz archive (unrecognised first bytes); upload a zip or a gzipped tar", [])


def inspect(data: bytes, limits: Limits) -> ArchiveReport:
    """Check every entry; raise ArchiveRejected with the report's problems if any. Bounded in time
    and in bytes inflated whatever the archive declares (see the module's docstring)."""
    report = ArchiveReport(_kind(data))
    deadline = time.monotonic() + limits.max_seconds
    budget = limits.unpacked_budget(len(data))
    files: set[PurePosixPath] = set()
    folders: set[PurePosixPath] = set()
    entries = _zip_entries(data) if report.kind == "zip" else _tar_entries(data, budget, limits, deadline)
    try:
        for name, kind, size, packed, why in entries:
            report.entries += 1
            if report.entries > limits.max_entries:
                report.problems.append(f"more than {limits.max_entries:,} entries, over the {limits.max_entries:,}-entry limit (max_archive_entries)")
                break
            _check_time(deadline, limits)
            why = why or _unsafe_name(name)
            if why is None and kind not in ("file", "dir"):
                why = f"a {kind}; only regular files and folders are accepted"
            if why is None:
                why = _clash(PurePosixPath(name), kind, files, folders)
            if why is None and kind == "file":
                report.files += 1
                report.unpacked_bytes += size
                if packed is not None and size > SMALL_BYTES and size > limits.max_ratio * max(packed, 1):
                    why = f"unpacks to {size:,} bytes from {packed:,} (ratio over {limits.max_ratio:g}): a zip bomb?"
            if why:
                report.problems.append(f"{name!r}: {why}")
            if report.unpacked_bytes > budget:  # stop here: a tar's next bytes would be this entry's data
                report.problems.append(_over_budget(report.unpacked_bytes, len(data), limits))
                break
    except ArchiveRejected:
        raise
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise ArchiveRejected(f"the {report.kind} archive is corrupt or truncated ({exc}); upload it again", []) from None
    finally:
        entries.close()
    if report.problems:
        raise ArchiveRejected(f"the archive was rejected ({len(report.problems)} problem(s)); nothing was changed", report.problems)
    if not report.files:
        raise ArchiveRejected("the archive holds no files; nothing was changed", [])
    return report


def _over_budget(unpacked: int, packed: int, limits: Limits) -> str:
    if unpacked > limits.max_unpacked_bytes:
        return f"unpacks to {unpacked:,} bytes or more, over the {limits.max_unpacked_bytes:,}-byte limit (max_unpacked_bytes)"
    return (
        f"unpacks to {unpacked:,} bytes or more from {packed:,}: a ratio over {limits.max_ratio:g} for the whole archive "
        "(max_compression_ratio): a zip bomb?"
    )


def _check_time(deadline: float, limits: Limits) -> None:
    if time.monotonic() > deadline:
        raise ArchiveRejected(
            f"checking the archive took longer than {limits.max_seconds:g}s (max_archive_inspect_s): too many entries "
            "or too much data; nothing was changed", [],
        )  # fmt: skip


def _clash(path: PurePosixPath, kind: str, files: set[PurePosixPath], folders: set[PurePosixPath]) -> str | None:
    """Why ``path`` cannot be unpacked beside the entries seen before it (a file that is also a folder, or twice)."""
    parents = set(path.parents) - {PurePosixPath(".")}
    if kind == "dir":
        parents.add(path)
    elif path in files:
        return "comes twice in the archive"
    elif path in folders:
        return "is a file and also a folder in the archive"
    if clash := next((str(p) for p in sorted(parents) if p in files), None):
        return f"needs {clash!r} to be a folder, but the archive has it as a file"
    folders.update(parents)
    if kind == "file":
        files.add(path)
    return None


Entry = tuple[str, str, int, int | None, str | None]  # name, kind, size, packed size (zip), why it is unreadable


def _zip_entries(data: bytes) -> Iterator[Entry]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            mode = info.external_attr >> 16  # Unix mode bits, when the zip was made on Unix (else 0)
            if stat.S_ISLNK(mode):
                kind = "symlink"
            elif stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                kind = "special file"
            else:
                kind = "dir" if info.is_dir() else "file"
            yield info.filename, kind, info.file_size, info.compress_size, _unreadable_zip_entry(archive, info) if kind == "file" else None


def _unreadable_zip_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> str | None:
    """Open the entry (its local header: nothing is decompressed) as unpacking will; why that fails, or None."""
    try:
        with archive.open(info):
            return None
    except zipfile.BadZipFile as exc:  # e.g. the local header names another file than the directory
        return f"its headers disagree ({exc})"
    except (RuntimeError, NotImplementedError) as exc:  # encrypted, or a compression zipfile cannot read
        return f"cannot be unpacked ({exc})"


class _BoundedStream(io.RawIOBase):
    """The inflated bytes of a gzip stream, cut off (ArchiveRejected) past ``cap`` bytes or the deadline:
    tarfile reads headers whole (a GNU long name of any declared size) and skips data by reading it."""

    def __init__(self, data: bytes, cap: int, limits: Limits, deadline: float) -> None:
        self._inflated = gzip.GzipFile(fileobj=io.BytesIO(data))
        self._cap, self._limits, self._deadline, self._packed = cap, limits, deadline, len(data)
        self._read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        _check_time(self._deadline, self._limits)
        chunk = self._inflated.read(min(len(buffer), 1 << 20))
        self._read += len(chunk)
        if self._read > self._cap:
            raise ArchiveRejected("the archive was rejected; nothing was changed", [_over_budget(self._read, self._packed, self._limits)])
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _tar_entries(data: bytes, budget: int, limits: Limits, deadline: float) -> Iterator[Entry]:
    cap = budget + TAR_HEADER_SLACK * (limits.max_entries + 2)
    with tarfile.open(fileobj=io.BufferedReader(_BoundedStream(data, cap, limits, deadline)), mode="r|") as archive:
        for member in archive:
            if member.issym():
                kind = "symlink"
            elif member.islnk():
                kind = "hard link"
            elif member.isdev() or member.isfifo():
                kind = "device file or FIFO"
            else:
                # names are checked by _unsafe_name (tarfile.data_filter would, but Debian 12's
                # Python 3.11.2, the container's, predates it); modes are never applied on unpack
                kind = "dir" if member.isdir() else "file" if member.isfile() else "special file"
            yield member.name, kind, member.size, None, None


def unpack(data: bytes, target: Path, limits: Limits) -> ArchiveReport:
    """Check, then unpack into ``target`` (a new folder); every write is bounded by the declared sizes."""
    report = inspect(data, limits)
    target.mkdir(parents=True)
    budget = limits.max_unpacked_bytes
    try:
        if report.kind == "zip":
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for info in archive.infolist():
                    if not info.is_dir():
                        with archive.open(info) as source:
                            budget -= _copy_bounded(source, target / info.filename, info.file_size, budget)
        else:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
                for member in archive:
                    if member.isfile():
                        source = archive.extractfile(member)
                        assert source is not None
                        budget -= _copy_bounded(source, target / member.name, member.size, budget)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        shutil.rmtree(target, ignore_errors=True)
        raise ArchiveRejected(f"the archive could not be unpacked ({exc}); nothing was changed", []) from None
    except ArchiveRejected:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return report


def _copy_bounded(source, path: Path, declared: int, budget: int) -> int:
    """Copy at most ``declared`` bytes (a header that lies about its size is caught here)."""
    limit = min(declared, budget)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(path, "wb") as out:
        while chunk := source.read(min(1 << 20, limit - written + 1)):
            written += len(chunk)
            if written > limit:
                raise ArchiveRejected(f"{path.name!r} unpacks to more than its declared {declared:,} bytes; nothing was changed", [])
            out.write(chunk)
    return written
