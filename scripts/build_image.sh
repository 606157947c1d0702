#!/usr/bin/env bash
# `make image`: the citedocs image and its PostgreSQL + pgvector image, from a Debian bookworm base
# made here with debootstrap (no image registry needed), with Python wheels downloaded on the host
# and installed offline in the image. Cached: the base image is made once, the wheels are
# downloaded again only when pyproject.toml changes, and docker's layer cache does the rest.
#
#   scripts/build_image.sh            # tags citedocs:latest and citedocs-postgres:latest
#
# Needs root, Debian's docker.io and debootstrap (apt-get install docker.io debootstrap); starts
# dockerd if it is not running.
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER=${DOCKER:-/usr/bin/docker}
BASE=citedocs-debian:bookworm
PYTHON=${PYTHON:-$(command -v .venv/bin/python || command -v python3.11)}
CONTEXT=build/container
MIRROR=${DEBIAN_MIRROR:-$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}

scripts/start_dockerd.sh

if ! "$DOCKER" image inspect "$BASE" >/dev/null 2>&1; then
  root="$(mktemp -d /tmp/citedocs-debootstrap.XXXXXX)"
  echo "making the base image $BASE (debootstrap --variant=minbase bookworm from $MIRROR)"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR" >/dev/null
  # apt inside builds: the same mirror; no docs or man pages in the layers
  echo "deb $MIRROR bookworm main" > "$root/etc/apt/sources.list"
  printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\n' \
    > "$root/etc/dpkg/dpkg.cfg.d/01-nodoc"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | "$DOCKER" import --change 'ENV LANG=C.UTF-8' - "$BASE" >/dev/null
  rm -rf "$root"
fi

# wheels for citedocs[postgres] and everything it needs (pip's host cache makes a rerun quick)
mkdir -p "$CONTEXT"
stamp="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$CONTEXT/wheels.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$CONTEXT/wheels"
  "$PYTHON" -m pip wheel --quiet --wheel-dir "$CONTEXT/wheels" '.[postgres]'
  echo "$stamp" > "$CONTEXT/wheels.stamp"
else  # the dependencies are unchanged: rebuild only citedocs's own wheel
  rm -f "$CONTEXT"/wheels/citedocs-*.whl
  "$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$CONTEXT/wheels" .
fi
rm -rf build/lib build/bdist.* src/*.egg-info  # left by the wheel build

"$DOCKER" build --quiet -f docker/Dockerfile -t citedocs:latest "$CONTEXT" >/dev/null
pg_context="$CONTEXT/postgres"
mkdir -p "$pg_context"
cp scripts/install_pgvector.sh docker/postgres-entrypoint.sh "$pg_context/"
"$DOCKER" build --quiet -f docker/postgres.Dockerfile -t citedocs-postgres:latest "$pg_context" >/dev/null
"$DOCKER" image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E '^citedocs(-postgres)?:latest '
