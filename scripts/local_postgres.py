"""Start or stop a throwaway PostgreSQL with pgvector on loopback, for tests, CI and trying the backend.

The server is Debian's PostgreSQL 15 with pgvector built from Debian's source package for plain
x86-64 (``scripts/install_pgvector.sh``), so it runs on every x86-64 CPU; ``CITEDOCS_PG_BIN`` names
another PostgreSQL bin folder (with pgvector installed) instead. PostgreSQL refuses to run as root:
as root, the server runs as the system user ``citedocs-pg`` (created if missing).

    python scripts/local_postgres.py start /tmp/citedocs-pg --port 55432 [--fast]
    python scripts/local_postgres.py stop /tmp/citedocs-pg

``start`` prints the server's URL (database ``postgres``, user ``postgres``, trust auth on
127.0.0.1 only). ``--fast`` turns off fsync: for throwaway test servers only.
"""

from __future__ import annotations

import argparse
import os
import pwd
import subprocess
import sys
from pathlib import Path

SERVER_USER = "citedocs-pg"
DEBIAN_BIN = Path("/usr/lib/postgresql/15/bin")
INSTALL_HINT = "run scripts/install_pgvector.sh (as root) to install PostgreSQL 15 with a portable pgvector"


def bin_dir() -> Path:
    """The PostgreSQL bin folder: ``CITEDOCS_PG_BIN``, else Debian's PostgreSQL 15; exits naming the fix
    when it has no server or its PostgreSQL has no pgvector."""
    folder = Path(os.environ.get("CITEDOCS_PG_BIN") or DEBIAN_BIN)
    if not (folder / "postgres").is_file():
        sys.exit(f"no PostgreSQL server in {folder}: {INSTALL_HINT}, or set CITEDOCS_PG_BIN to a bin folder")
    share = subprocess.run([str(folder / "pg_config"), "--sharedir"], capture_output=True, text=True, check=True)
    if not (Path(share.stdout.strip()) / "extension" / "vector.control").is_file():
        sys.exit(f"the PostgreSQL in {folder} has no pgvector extension: {INSTALL_HINT}")
    return folder


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


def start(data: Path, port: int, fast: bool) -> str:
    data.mkdir(parents=True, exist_ok=True)
    data.parent.chmod(data.parent.stat().st_mode | 0o711)
    prefix = _as_server_user(data)
    binaries = bin_dir()
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
    binaries = bin_dir()
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
