#!/usr/bin/env bash
# Start Debian's dockerd in the background if no daemon answers (CI machines run no init system).
set -euo pipefail
DOCKER=${DOCKER:-/usr/bin/docker}
"$DOCKER" info >/dev/null 2>&1 && exit 0
command -v dockerd >/dev/null || { echo "dockerd is missing: apt-get install docker.io" >&2; exit 2; }
nohup dockerd >/var/log/citedocs-dockerd.log 2>&1 &
for _ in $(seq 60); do
  "$DOCKER" info >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "dockerd did not start; see /var/log/citedocs-dockerd.log" >&2
exit 2
