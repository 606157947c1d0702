"""What a corpus is read from, and getting it ready to be read again: a folder as it is, a git working
tree (pulled only when the operator allowed it), a site to crawl, or the last uploaded archive.

A source never changes the live index by itself: it hands a folder to the ingest, whose single
write transaction switches the corpus to its new version (or leaves the old one serving).
"""

from __future__ import annotations

import random
import re
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

from ..index.store import SOURCE_KINDS, CorpusSource

SCHEDULE_JITTER = 0.1  # a scheduled sync lands within +-10% of its period, so corpora do not all sync at once
_EVERY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
GIT_TIMEOUT_S = 120
MAX_PERIOD_S = 366 * 86400  # a longer period is a typo, and past a date's range it cannot be scheduled


class SourceError(ValueError):
    """The source cannot be read (vanished, local changes, pull failed); nothing was changed."""


def parse_every(text: str) -> float:
    """Seconds in a period like ``30m``, ``6h`` or ``1d``."""
    match = _EVERY.match(text or "")
    if not match or float(match.group(1)) <= 0:
        raise SourceError(f"invalid schedule {text!r}: use a number and a unit, e.g. 30m, 6h or 1d")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds < 60:
        raise SourceError(f"schedule {text!r} is shorter than a minute; sync at most once a minute")
    if seconds > MAX_PERIOD_S:
        raise SourceError(f"schedule {text!r} is longer than a year; use at most 365d (or no schedule)")
    return seconds


def next_sync_after(now: datetime, every: str, rng: random.Random | None = None) -> str:
    """When the next scheduled sync is due: ``every`` from now, jittered."""
    seconds = parse_every(every)
    jitter = (rng or random).uniform(-SCHEDULE_JITTER, SCHEDULE_JITTER)
    return (now + timedelta(seconds=seconds * (1 + jitter))).isoformat(timespec="milliseconds")


def check_kind(kind: str) -> str:
    if kind not in SOURCE_KINDS:
        raise SourceError(f"unknown source kind {kind!r}; use one of {', '.join(SOURCE_KINDS)}")
    return kind


def describe(source: CorpusSource) -> dict:
    """The source as the admin routes show it (never the webhook secret)."""
    shown = {k: v for k, v in source.options.items() if k in ("branch", "pull", "every", "eval", "floors", "base_url", "format")}
    return {"kind": source.kind, "location": source.location, "webhook": source.webhook_secret is not None, **shown}


def _git(folder: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise SourceError(f"`git {' '.join(args)}` in {folder} took over {GIT_TIMEOUT_S}s; nothing was changed") from None
    if done.returncode != 0:
        raise SourceError(
            f"`git {' '.join(args)}` failed in {folder}: {(done.stderr or done.stdout).strip()[:500]}; nothing was changed"
        )
    return done.stdout


def prepare_folder(source: CorpusSource) -> tuple[Path, str]:
    """The folder to ingest for a folder or git source, and a note on what was done to get it."""
    folder = Path(source.location)
    if not folder.is_dir():
        raise SourceError(
            f"the source folder of corpus {source.corpus!r} is gone: {folder} does not exist (or is not a folder); "
            "the live version keeps serving. Restore it, or point the corpus elsewhere with `citedocs sources set`."
        )
    if source.kind != "git":
        return folder, f"read folder {folder}"
    _git(folder, "rev-parse", "--show-toplevel")
    dirty = [line for line in _git(folder, "status", "--porcelain", "--untracked-files=normal").splitlines() if line]
    if dirty:
        sample = ", ".join(line[3:] for line in dirty[:3])
        raise SourceError(
            f"the git working tree at {folder} has local changes ({len(dirty)} path(s), e.g. {sample}): commit, stash or "
            "discard them so the corpus matches a commit; nothing was changed"
        )
    before = _git(folder, "rev-parse", "HEAD").strip()
    branch = source.options.get("branch")
    if not source.options.get("pull"):
        return folder, f"read git working tree {folder} as is at {before[:12]} (pulling is off for this corpus)"
    current = _git(folder, "rev-parse", "--abbrev-ref", "HEAD").strip()
    if branch and current != branch:
        raise SourceError(
            f"the git working tree at {folder} is on branch {current!r}, not the configured {branch!r}: "
            f"check out {branch} there (or change --branch); nothing was changed"
        )
    _git(folder, "pull", "--ff-only", "--quiet", "origin", branch or current)
    after = _git(folder, "rev-parse", "HEAD").strip()
    moved = f"pulled {branch or current}: {before[:12]} -> {after[:12]}" if after != before else f"pulled {branch or current}: already at {after[:12]}"
    return folder, moved
