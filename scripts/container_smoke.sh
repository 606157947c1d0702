#!/usr/bin/env bash
# CI: build the images (`make image`), start compose.yaml's stack, ingest a few real Astro pages,
# ask a question, restart the stack (volumes kept) and ask again: the same cited answer; then upload
# the pages as an archive with an admin key and see the stack's workers finish the sync job. Tears
# the stack and its volumes down whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER=${DOCKER:-/usr/bin/docker}
scripts/build_image.sh
"$DOCKER" image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E '^citedocs(-postgres)?:latest '

export CITEDOCS_DB_PASSWORD="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export CITEDOCS_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export CITEDOCS_CORPUS=smoke
compose=(docker-compose -p "citedocs-smoke-$$" -f compose.yaml)
docs="$(mktemp -d /tmp/citedocs-smoke-docs.XXXXXX)"
cleanup() {
  local status=$?
  [ "$status" = 0 ] || "${compose[@]}" logs --no-color --tail 40 citedocs worker postgres >&2 || true
  "${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  rm -rf "$docs"
}
trap cleanup EXIT

healthy() {  # wait until both containers report healthy
  for _ in $(seq 150); do
    local all=1
    for service in postgres citedocs; do
      id="$("${compose[@]}" ps -q "$service")"
      [ "$("$DOCKER" inspect -f '{{.State.Health.Status}}' "$id" 2>/dev/null)" = healthy ] || all=0
    done
    [ "$all" = 1 ] && return 0
    sleep 2
  done
  echo "the stack did not become healthy" >&2
  return 1
}

ask() {
  curl -fsS "http://127.0.0.1:$CITEDOCS_PORT/ask" -H 'content-type: application/json' \
    -d '{"question": "How do I deploy my Astro site to Heroku?"}' \
  | python3 -c 'import json, sys; a = json.load(sys.stdin); assert not a["refused"] and a["citations"], a; print(a["corpus_version"], a["answer"])'
}

"${compose[@]}" up -d
healthy
astro="${CITEDOCS_ASTRO_DOCS:-evals/corpora/astro-docs/docs}"
for page in guides/deploy/heroku.mdx recipes/add-yaml-support.mdx reference/errors/missing-sharp.mdx guides/backend/index.mdx; do
  mkdir -p "$docs/$(dirname "$page")"
  cp "$astro/$page" "$docs/$page"
done
chmod -R a+rX "$docs"
"${compose[@]}" run --rm -v "$docs:/docs:ro" citedocs ingest /docs --corpus smoke --base-url https://docs.astro.build/en/
first="$(ask)"
echo "asked: $first"

"${compose[@]}" down   # the named volumes stay
"${compose[@]}" up -d
healthy
second="$(ask)"
echo "asked again after a restart: $second"
[ "$first" = "$second" ] || { echo "the answer changed across the restart" >&2; exit 1; }

# An archive upload, synced by a worker of the stack (the `worker` service or serve's own).
key="$("${compose[@]}" run --rm -T citedocs keys create --admin --name smoke 2>/dev/null | tail -1)"
archive="$docs.tar.gz"
tar -C "$docs" -czf "$archive" .
api="http://127.0.0.1:$CITEDOCS_PORT"
job="$(curl -fsS -X POST -H "Authorization: Bearer $key" --data-binary @"$archive" \
  "$api/admin/corpora/smoke/archive?base_url=https%3A%2F%2Fdocs.astro.build%2Fen%2F" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["job"]["id"])')"
rm -f "$archive"
for _ in $(seq 120); do
  status="$(curl -fsS -H "Authorization: Bearer $key" "$api/admin/jobs/$job" | python3 -c 'import json, sys; print(json.load(sys.stdin)["job"]["status"])')"
  case "$status" in succeeded) break ;; failed|held) echo "sync job $job ended $status" >&2; exit 1 ;; esac
  sleep 2
done
[ "$status" = succeeded ] || { echo "sync job $job did not finish (last status: $status)" >&2; exit 1; }
echo "uploaded archive synced by the stack: job $job $status"
ask >/dev/null
echo "container smoke test passed"
