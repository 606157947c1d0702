"""The pgvector the PostgreSQL tests (and CI, and the container image) run needs no AVX-512.

A ``vector.so`` compiled with AVX-512 in its distance functions dies with SIGILL on the many x86-64
CPUs without it (AMD EPYC before Zen 4, older Intel), and on a machine that has AVX-512 nothing
shows. Two checks of the build in use:

* It is disassembled: pgvector only enters its ``*Avx512*`` functions after a CPU check at run
  time, so any ``zmm`` register (an AVX-512 instruction) outside them fails.
* It runs on an emulated CPU without AVX-512: the server's own PostgreSQL, in single-user mode,
  under ``qemu-x86_64 -cpu Haswell`` (Debian's qemu-user; its emulator has AVX2 and FMA but no
  AVX-512), creates the extension, builds an HNSW index over a few hundred 384-dimension vectors
  and answers nearest-neighbour queries as an exact scan does. A program compiled for AVX-512 dies
  with SIGILL under the same command: the emulated CPU really lacks it. (The multi-process server
  crashes under qemu-user, its single-user mode does not: one process runs the same code.)
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

FUNCTION = re.compile(r"^[0-9a-f]+ <(?P<name>[^>]+)>:$")


def unchecked_avx512(library: Path) -> dict[str, int]:
    """{function: instructions using zmm registers} for every function outside the CPU-checked ``*Avx512*`` ones."""
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.fail("objdump is missing: apt-get install binutils")
    listing = subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", str(library)], capture_output=True, text=True, check=True
    ).stdout
    found: dict[str, int] = {}
    function = ""
    for line in listing.splitlines():
        if match := FUNCTION.match(line):
            function = match["name"]
        elif "%zmm" in line and "Avx512" not in function:
            found[function] = found.get(function, 0) + 1
    return found


def test_the_servers_pgvector_runs_without_avx512(postgres_server: str) -> None:
    with psycopg.connect(postgres_server) as conn:
        libdir = conn.execute("SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'").fetchone()[0]
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    library = Path(libdir) / "vector.so"
    if not library.is_file():
        pytest.fail(f"the test server's {library} is not on this machine; run the tests against a local server")
    assert unchecked_avx512(library) == {}, (
        f"{library} (pgvector {version}) uses AVX-512 without a CPU check: it dies with SIGILL on CPUs without "
        "AVX-512; build it with scripts/install_pgvector.sh (OPTFLAGS=\"\")"
    )


def test_the_check_catches_an_avx512_build(tmp_path: Path) -> None:
    """The disassembly check itself: a library whose plain function was compiled for AVX-512 is caught,
    while the same code in a function named like pgvector's CPU-checked ones is let through."""
    source = tmp_path / "distance.c"
    source.write_text(
        "float l2_distance(const float *a, const float *b, int n) {\n"
        "  float s = 0; for (int i = 0; i < n; i++) { float d = a[i] - b[i]; s += d * d; } return s; }\n"
        "float L2DistanceAvx512(const float *a, const float *b, int n) {\n"
        "  float s = 0; for (int i = 0; i < n; i++) { float d = a[i] - b[i]; s += d * d; } return s; }\n"
    )
    library = tmp_path / "distance.so"
    subprocess.run(
        ["cc", "-O3", "-ffast-math", "-march=x86-64-v4", "-mprefer-vector-width=512", "-shared", "-fPIC",
         "-o", str(library), str(source)],
        check=True,
    )
    assert set(unchecked_avx512(library)) == {"l2_distance"}


EMULATED_CPU = ["-cpu", "Haswell"]  # AVX2 + FMA, no AVX-512 (QEMU's emulator implements none of it)
SERVER_USER = "citedocs-pg"  # scripts/local_postgres.py's server user when root starts it
# 400 seeded random 384-dimension vectors (the MiniLM width), an HNSW index for inner product (what
# citedocs searches with), 20 queries: their 10 nearest by the index and by an exact scan. Single-user
# mode reads one statement a line. A statement that ends within a second of the last statistics flush
# arms PostgreSQL's 10-second idle-statistics timer; its SIGALRM, delivered while a long statement runs,
# kills qemu-user 7.2's emulated process with a segmentation fault (the same binaries take the signal
# natively), so the slower the machine, the likelier the crash. A pause over a second before each long
# statement lets the idle backend flush instead of arming the timer.
NEAREST_SQL = """
CREATE EXTENSION vector;
SELECT setseed(0.29);
SELECT pg_sleep(1.2);
CREATE TABLE items AS SELECT i AS id, array_agg(random() - 0.5)::vector(384) AS e FROM generate_series(1, 400) i CROSS JOIN generate_series(1, 384) d GROUP BY i;
CREATE TABLE queries AS SELECT id, e FROM items WHERE id % 20 = 0;
SELECT pg_sleep(1.2);
CREATE INDEX items_hnsw ON items USING hnsw (e vector_ip_ops);
SET enable_indexscan = off;
SELECT pg_sleep(1.2);
CREATE TABLE exact AS SELECT q.id AS qid, n.id FROM queries q CROSS JOIN LATERAL (SELECT id FROM items ORDER BY e <#> q.e LIMIT 10) n;
SET enable_indexscan = on;
SET enable_seqscan = off;
SET hnsw.ef_search = 100;
EXPLAIN SELECT id FROM items ORDER BY e <#> (SELECT e FROM items WHERE id = 1) LIMIT 10;
SELECT pg_sleep(1.2);
CREATE TABLE approx AS SELECT q.id AS qid, n.id FROM queries q CROSS JOIN LATERAL (SELECT id FROM items ORDER BY e <#> q.e LIMIT 10) n;
SELECT (SELECT count(*) FROM exact) AS exact_rows, (SELECT count(*) FROM approx JOIN exact USING (qid, id)) AS found;
"""


def _qemu() -> str:
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        pytest.fail("qemu-x86_64 is missing: apt-get install qemu-user (CI's .ci/run installs it)")
    return qemu


def test_the_emulated_cpu_has_no_avx512(tmp_path: Path) -> None:
    """The control for the test below: code compiled for AVX-512 dies with SIGILL under the emulator."""
    source = tmp_path / "avx512.c"
    source.write_text(
        "#include <immintrin.h>\n#include <stdio.h>\n"
        "int main(void) { volatile float in[16] = {1}; __m512 v = _mm512_loadu_ps((const float *)in);\n"
        "  float out[16]; _mm512_storeu_ps(out, _mm512_add_ps(v, v)); printf(\"%f\\n\", out[0]); return 0; }\n"
    )
    program = tmp_path / "avx512"
    subprocess.run(["cc", "-O1", "-mavx512f", "-o", str(program), str(source)], check=True)
    emulated = subprocess.run([_qemu(), *EMULATED_CPU, str(program)], capture_output=True, text=True)
    assert emulated.returncode == -4, (emulated.returncode, emulated.stdout, emulated.stderr)  # SIGILL


def test_the_servers_pgvector_finds_nearest_neighbours_on_a_cpu_without_avx512(postgres_server: str) -> None:
    with psycopg.connect(postgres_server) as conn:
        bindir = Path(conn.execute("SELECT setting FROM pg_config WHERE name = 'BINDIR'").fetchone()[0])
    if not (bindir / "postgres").is_file():
        pytest.fail(f"the test server's {bindir}/postgres is not on this machine; run the tests against a local server")
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="citedocs-test-qemu-pg-"))  # not pytest's 0700 tmp: the server user reads it
    try:
        folder.chmod(0o755)
        data = folder / "data"
        data.mkdir()
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            entry = pwd.getpwnam(SERVER_USER)
            os.chown(data, entry.pw_uid, entry.pw_gid)
            as_user = ["runuser", "-u", SERVER_USER, "--"]
        subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--no-sync", "--no-instructions"],
                       check=True, capture_output=True)  # fmt: skip
        emulated = subprocess.run(
            [*as_user, _qemu(), *EMULATED_CPU, str(bindir / "postgres"), "--single", "-D", str(data), "-c", "fsync=off", "-c", "jit=off", "postgres"],
            input=NEAREST_SQL, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    output = emulated.stdout + emulated.stderr
    assert emulated.returncode == 0, output[-3000:]
    assert "ERROR" not in output and "signal" not in output, output[-3000:]
    assert "Index Scan using items_hnsw" in output, output[-3000:]  # the HNSW index answered the queries
    exact = int(re.search(r'exact_rows = "(\d+)"', output)[1])
    found = int(re.search(r'found = "(\d+)"', output)[1])
    assert exact == 200 and found >= 0.9 * exact, (found, exact)  # the index finds what an exact scan finds
