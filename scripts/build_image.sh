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

# Wheels for citedocs[postgres] and everything it needs, downloaded again only when pyproject.toml
# changes (pip's host cache makes even that quick); citedocs's own wheel is rebuilt every time.
# Left out of the image: torch and the packages only the ONNX graph export or the torch encoder
# runtime import (the graphs are exported here on the host, below).
EXCLUDED='^(torch|sentence_transformers|transformers|sympy|mpmath|networkx)-'  # scikit-learn stays: insights group docs gaps with it
mkdir -p "$CONTEXT/wheels"
stamp="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$CONTEXT/wheels.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$CONTEXT/wheels" "$CONTEXT/all-wheels"
  "$PYTHON" -m pip wheel --quiet --wheel-dir "$CONTEXT/all-wheels" '.[postgres]' 2>&1 | { grep -v 'is neither a file nor a directory' || true; }
  mkdir -p "$CONTEXT/wheels/deps" "$CONTEXT/wheels/citedocs"
  for wheel in "$CONTEXT"/all-wheels/*.whl; do
    name="$(basename "$wheel")"
    case "$name" in citedocs-*) continue ;; esac
    echo "$name" | grep -Eq "$EXCLUDED" || mv "$wheel" "$CONTEXT/wheels/deps/"
  done
  rm -rf "$CONTEXT/all-wheels"
  echo "$stamp" > "$CONTEXT/wheels.stamp"
fi
rm -rf "$CONTEXT/wheels/citedocs"
"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$CONTEXT/wheels/citedocs" .
rm -rf build/lib build/bdist.* src/*.egg-info  # left by the wheel build

# The bi-encoder's ONNX graphs (fp32 and int8), exported from the bundled weights with this
# checkout's code into the build context (a no-op when they are there already).
for runtime in onnx-fp32 onnx-int8; do
  CITEDOCS_MODEL_CACHE="$PWD/$CONTEXT/models" CITEDOCS_ENCODER_RUNTIME=$runtime PYTHONPATH="$PWD/src" \
    "$PYTHON" -m citedocs.models prepare >"$CONTEXT/prepare.log" 2>&1 || { cat "$CONTEXT/prepare.log" >&2; exit 1; }
done

"$DOCKER" build --quiet -f docker/Dockerfile -t citedocs:latest "$CONTEXT" >/dev/null
pg_context="$CONTEXT/postgres"
mkdir -p "$pg_context"
cp scripts/install_pgvector.sh docker/postgres-entrypoint.sh "$pg_context/"
"$DOCKER" build --quiet -f docker/postgres.Dockerfile -t citedocs-postgres:latest "$pg_context" >/dev/null
"$DOCKER" image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E '^citedocs(-postgres)?:latest '
