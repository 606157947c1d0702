#!/usr/bin/env bash
# PostgreSQL 15 (Debian bookworm's own packages) with pgvector 0.8.0 built from Debian's source
# package for plain x86-64: it runs on every x86-64 CPU, with or without AVX-512.
#
# Debian bookworm has no pgvector binary package, and the prebuilt servers on PyPI compile
# pgvector's distance functions for the build machine's CPU (one of them with AVX-512: SIGILL on
# CPUs without it). So this script takes pgvector's Debian source package (the one trixie builds
# postgresql-17-pgvector from), checks the sha256 of its files against the values pinned below,
# applies Debian's patches (dpkg-source) and compiles it with OPTFLAGS="" (no -march=native).
# pgvector picks its FMA/AVX-512 code paths at run time after a CPU check, so the build is portable.
#
#   sudo scripts/install_pgvector.sh          # idempotent: a no-op (< 1 s) when this build is installed
#
# Afterwards: scripts/local_postgres.py starts a server from /usr/lib/postgresql/15/bin, and
# tests/test_pgvector_build.py checks that the installed vector.so needs no AVX-512.
set -euo pipefail

PG_MAJOR=15
PGVECTOR_VERSION=0.8.0
DEBIAN_REVISION=1
POOL=${PGVECTOR_POOL:-http://deb.debian.org/debian/pool/main/p/pgvector}
ORIG_SHA256=867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0
DEBIAN_SHA256=6cb10bfdee32a093f0711a53d61f63657514d60058ff76a44ae2a4434f9c7ee5
PG_CONFIG=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config
MARKER=/usr/share/postgresql/$PG_MAJOR/extension/citedocs-pgvector-build

want="pgvector $PGVECTOR_VERSION-$DEBIAN_REVISION OPTFLAGS=''"
if [ -x "$PG_CONFIG" ] && [ "$(cat "$MARKER" 2>/dev/null)" = "$want" ] \
   && [ -f "$("$PG_CONFIG" --pkglibdir)/vector.so" ]; then
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
packages="postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR build-essential dpkg-dev curl ca-certificates"
# shellcheck disable=SC2086
if ! dpkg -s $packages >/dev/null 2>&1; then
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq -o DPkg::Lock::Timeout=300 $packages >/dev/null
fi

work="$(mktemp -d /tmp/pgvector-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
orig="pgvector_${PGVECTOR_VERSION}.orig.tar.gz"
deb="pgvector_${PGVECTOR_VERSION}-${DEBIAN_REVISION}.debian.tar.xz"
dsc="pgvector_${PGVECTOR_VERSION}-${DEBIAN_REVISION}.dsc"
for file in "$orig" "$deb" "$dsc"; do
  curl -fsS --retry 3 -o "$file" "$POOL/$file"
done
printf '%s  %s\n%s  %s\n' "$ORIG_SHA256" "$orig" "$DEBIAN_SHA256" "$deb" | sha256sum --quiet -c -
# dpkg-source checks the files against the .dsc's checksums too, then applies Debian's patches
dpkg-source -x "$dsc" src >/dev/null
make -C src -s -j"$(nproc)" OPTFLAGS="" PG_CONFIG="$PG_CONFIG" >/dev/null
make -C src -s OPTFLAGS="" PG_CONFIG="$PG_CONFIG" install >/dev/null
echo "$want" > "$MARKER"
echo "installed $want into $("$PG_CONFIG" --pkglibdir)/vector.so"
