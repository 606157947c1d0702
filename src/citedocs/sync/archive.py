"""Uploaded docs archives (.zip, .tar.gz): checked whole before anything is unpacked, then unpacked
with every entry's size bounded.

Rejected, with one line per offending entry in the report: entries whose path escapes the root
(absolute, ``..``, a drive or backslash path), symlinks and hard links, device files and FIFOs,
more entries than ``max_archive_entries``, more unpacked bytes than ``max_unpacked_bytes``, and
entries that unpack to more than ``max_compression_ratio`` times their packed size (zip bombs).
Tar members also go through the standard library's ``tarfile.data_filter`` (PEP 706), the filter
Python itself recommends for archives from untrusted sources.
"""

from __future__ import annotations

import io
import shutil
import stat
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import config


class ArchiveRejected(ValueError):
    """The archive is unsafe or unreadable; ``problems`` lists why, entry by entry. Nothing was changed."""

    def __init__(self, summary: str, problems: list[str]) -> None:
        super().__init__(summary + (": " + "; ".join(problems[:5]) if problems else ""))
        self.summary = summary
        self.problems = problems


@dataclass(frozen=True)
class Limits:
    max_entries: int
    max_unpacked_bytes: int
    max_ratio: float

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(
            config.setting("max_archive_entries"), config.setting("max_unpacked_bytes"), config.setting("max_compression_ratio")
        )


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
    return None


def _kind(data: bytes) -> str:
    if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        return "zip"
    if data[:2] == b"\x1f\x8b":
        return "tar.gz"
    raise ArchiveRejected("not a .zip or .tar.gz archive (unrecognised first bytes); upload a zip or a gzipped tar", [])


def inspect(data: bytes, limits: Limits) -> ArchiveReport:
    """Check every entry; raise ArchiveRejected with the report's problems if any."""
    report = ArchiveReport(_kind(data))
    try:
        entries = list(_zip_entries(data) if report.kind == "zip" else _tar_entries(data))
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise ArchiveRejected(f"the {report.kind} archive is corrupt or truncated ({exc}); upload it again", []) from None
    for name, kind, size, packed in entries:
        report.entries += 1
        why = _unsafe_name(name)
        if why is None and kind not in ("file", "dir"):
            why = f"a {kind}; only regular files and folders are accepted"
        if why is None and kind == "file":
            report.files += 1
            report.unpacked_bytes += size
            if packed is not None and size > 1_000_000 and size > limits.max_ratio * max(packed, 1):
                why = f"unpacks to {size:,} bytes from {packed:,} (ratio over {limits.max_ratio:g}): a zip bomb?"
        if why:
            report.problems.append(f"{name!r}: {why}")
    if report.entries > limits.max_entries:
        report.problems.append(f"{report.entries:,} entries, over the {limits.max_entries:,}-entry limit (max_archive_entries)")
    if report.unpacked_bytes > limits.max_unpacked_bytes:
        report.problems.append(
            f"unpacks to {report.unpacked_bytes:,} bytes, over the {limits.max_unpacked_bytes:,}-byte limit (max_unpacked_bytes)"
        )
    if report.problems:
        raise ArchiveRejected(f"the archive was rejected ({len(report.problems)} problem(s)); nothing was changed", report.problems)
    if not report.files:
        raise ArchiveRejected("the archive holds no files; nothing was changed", [])
    return report


def _zip_entries(data: bytes):
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            mode = info.external_attr >> 16  # Unix mode bits, when the zip was made on Unix (else 0)
            if stat.S_ISLNK(mode):
                kind = "symlink"
            elif stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                kind = "special file"
            else:
                kind = "dir" if info.is_dir() else "file"
            yield info.filename, kind, info.file_size, info.compress_size


def _tar_entries(data: bytes):
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
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
            yield member.name, kind, member.size, None


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
