"""Uploaded archives cannot stall or fill the server: the check runs off the event loop, bounded in
time, bytes and compression ratio for zip and tar.gz alike; broken archives are answered 422 before
a job exists.

Real parts: a real `citedocs serve` (uvicorn), real zip and gzip streams. The bombs are built the way
an attacker builds them, without compressing gigabytes: one compressed MiB of zeros, repeated (each
copy ends in a full flush, so each inflates on its own); their CRC is not computed, a check that
works never reads that far."""

from __future__ import annotations

import io
import struct
import tarfile
import threading
import time
import zipfile
import zlib
from pathlib import Path

import httpx
import pytest

from citedocs.service import Services
from citedocs.sync import archive

from conftest import SMALL_CORPUS, copy_of_small_home, running_server

LIMITS = archive.Limits(max_entries=1000, max_unpacked_bytes=500_000_000, max_ratio=200, max_seconds=20)


def tar_bomb(declared: int, name: str = "docs/bomb.md") -> bytes:
    """A .tar.gz of one member declaring ``declared`` bytes of zeros (about declared / 1000 bytes packed)."""
    header = tarfile.TarInfo(name)
    header.size = declared
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = deflate.compress(header.tobuf(format=tarfile.GNU_FORMAT)) + deflate.flush(zlib.Z_FULL_FLUSH)
    mebibyte = deflate.compress(bytes(1 << 20)) + deflate.flush(zlib.Z_FULL_FLUSH)
    body = head + mebibyte * (declared >> 20) + deflate.flush()
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + body + struct.pack("<LL", 0, declared & 0xFFFFFFFF)


def zipped(files: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive_file:
        for name, data in files.items():
            archive_file.writestr(name, data)
    return buffer.getvalue()


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_health_answers_promptly_while_tar_bombs_are_inspected_and_they_are_cut_off_in_time(small_home, tmp_path):
    """Limits raised so that only the time bound stops the bombs: two 6 GiB bombs inflate for
    seconds each, in worker threads, while /healthz keeps answering."""
    home = copy_of_small_home(small_home, tmp_path / "home")
    services = Services.open(home / "citedocs.sqlite3")
    admin = services.create_key("default", "ops", admin=True)[1]
    services.store.close()
    bomb = tar_bomb(6 << 30)
    env = {
        "CITEDOCS_DATABASE_URL": "", "CITEDOCS_RATE_LIMIT_PER_MINUTE": "0", "CITEDOCS_MAX_UNPACKED_BYTES": str(10**13),
        "CITEDOCS_MAX_COMPRESSION_RATIO": "1e9", "CITEDOCS_MAX_ARCHIVE_INSPECT_S": "3",
    }  # fmt: skip
    with running_server(home, **env) as (base, _):
        answers: list[httpx.Response] = []

        def upload() -> None:
            answers.append(httpx.post(f"{base}/admin/corpora/{SMALL_CORPUS}/archive", content=bomb, headers=bearer(admin), timeout=120))

        senders = [threading.Thread(target=upload) for _ in range(2)]
        for sender in senders:
            sender.start()
        time.sleep(0.5)  # both bombs are being inflated
        waits = []
        while any(s.is_alive() for s in senders):
            sent = time.perf_counter()
            assert httpx.get(f"{base}/healthz", timeout=60).status_code == 200
            waits.append(time.perf_counter() - sent)
            time.sleep(0.1)
        for sender in senders:
            sender.join()
    assert max(waits) < 1.0, f"/healthz waited {max(waits):.1f}s while archives were inspected"
    assert len(waits) >= 5, "the bombs were not inspected for long enough to measure anything"
    for answer in answers:
        assert answer.status_code == 422 and answer.json()["error"] == "archive_rejected", answer.text
        assert "longer than 3s (max_archive_inspect_s)" in answer.json()["detail"]


def test_a_tar_bomb_is_rejected_at_its_header_without_inflating_its_data():
    started = time.perf_counter()
    with pytest.raises(archive.ArchiveRejected) as rejected:
        archive.inspect(tar_bomb(6 << 30), LIMITS)
    assert "max_unpacked_bytes" in " ".join(rejected.value.problems)
    assert time.perf_counter() - started < 1.0
    with pytest.raises(archive.ArchiveRejected) as rejected:  # 100 MiB of zeros in 100 kB: within the byte limit, not the ratio
        archive.inspect(tar_bomb(100 << 20), LIMITS)
    assert "max_compression_ratio" in " ".join(rejected.value.problems)


def names_disagree() -> bytes:
    """A zip whose local header names another file than its central directory does."""
    data = zipped({"docs/a.md": b"# A\n\nText.\n"})
    return data.replace(b"docs/a.md", b"docs/b.md", 1)  # the local header comes first


BROKEN = {
    "names-disagree": (names_disagree(), "headers disagree"),
    "file-and-folder": (zipped({"docs/a.md": b"# A\n", "docs/a.md/b.md": b"# B\n"}), "the archive has it as a file"),
    "folder-then-file": (zipped({"docs/x/b.md": b"# B\n", "docs/x": b"# X\n"}), "a file and also a folder"),
    "twice": (zipped({"docs/a.md": b"# A\n", "docs/b.md": b"# B\n"}).replace(b"docs/b.md", b"docs/a.md"), "comes twice"),
    "long-name": (zipped({"docs/" + "x" * 300 + ".md": b"# A\n"}), "longer than 255 bytes"),
    "long-tar-name": (None, "longer than 255 bytes"),
}


@pytest.mark.parametrize("case", BROKEN, ids=list(BROKEN))
def test_a_broken_archive_is_rejected_at_inspection_with_what_is_wrong(case):
    data, problem = BROKEN[case]
    if data is None:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            info = tarfile.TarInfo("docs/" + "ж" * 200 + ".md")  # 400 bytes in UTF-8: a GNU long name
            info.size = 4
            tar.addfile(info, io.BytesIO(b"# A\n"))
        data = buffer.getvalue()
    with pytest.raises(archive.ArchiveRejected) as rejected:
        archive.inspect(data, LIMITS)
    assert problem in " ".join(rejected.value.problems), rejected.value.problems


def test_a_zip_whose_entries_are_small_but_whose_total_is_a_bomb_is_rejected():
    """Many small entries, each under the per-entry check's floor: 384 MB from a few hundred kB."""
    page = b"<p>" + b"a" * 999_997  # 1 MB, under the per-entry floor, about 1 kB deflated
    data = zipped({f"docs/{n}.html": page for n in range(384)})
    assert len(data) < 500_000
    with pytest.raises(archive.ArchiveRejected) as rejected:
        archive.inspect(data, LIMITS)
    assert "whole archive (max_compression_ratio)" in " ".join(rejected.value.problems)
