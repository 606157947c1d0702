"""The pgvector the PostgreSQL tests (and CI, and the container image) run needs no AVX-512.

A ``vector.so`` compiled with AVX-512 in its distance functions dies with SIGILL on the many x86-64
CPUs without it (AMD EPYC before Zen 4, older Intel), and on a machine that has AVX-512 nothing
shows. So the build in use is disassembled: pgvector only enters its ``*Avx512*`` functions after a
CPU check at run time, so any ``zmm`` register (an AVX-512 instruction) outside them fails.
"""

from __future__ import annotations

import re
import shutil
import subprocess
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
