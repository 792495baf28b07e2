"""Uncommitted evidence is not evidence: the files a reviewer audits must be the commit's.

`dvc.lock` binds every DVC-cached output (run reports, receipts, adapters) by md5, and the files
people read (`reports/base_model.json`, the summary and its plots) are committed to git. A
reviewer's `pappo audit` therefore fails integrity when any of them differs from HEAD. The
`audit` stage runs inside `dvc repro`, before the commit by nature: it audits the workspace the
run just produced, and its verdict says so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import yaml

from pappo.io import git

EVIDENCE_PATHS: tuple[str, ...] = (
    "dvc.lock",
    "reports/base_model.json",
    "reports/base_model_metrics.json",
    "reports/summary.json",
    "reports/summary.md",
    "reports/summary",
)
Scope = Literal["commit", "workspace"]
# libyaml's parser where PyYAML was built with it (the same objects): a dvc.lock is ~200 kB and the
# pure-Python parser took half of an audit (0.75 vs 0.15 s here)
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C parser where PyYAML has it
STATES = {"M": "modified", "A": "added, not committed", "D": "deleted", "R": "renamed", "?": "untracked"}


def uncommitted(root: Path) -> list[tuple[str, str]]:
    """(path, state) of every evidence file that differs from HEAD (or is not in git at all)."""
    out = git(root, "status", "--porcelain", "--untracked-files=all", "--", *EVIDENCE_PATHS)
    if out.returncode != 0:
        return [("(repository)", "not a git work tree")]
    found = []
    for line in out.stdout.decode().splitlines():
        code = (line[:2].strip() or "M")[0]
        found.append((line[3:].strip().strip('"'), STATES.get(code, "changed")))
    return found


def check_committed(fail: Callable[[Path | str, str, Any, Any, str], None], root: Path, stage: bool) -> Scope:
    """Fail on evidence that is not HEAD's; in stage mode (inside `dvc repro`) audit the workspace."""
    if stage:
        return "workspace"
    for path, state in uncommitted(root):
        fail(
            path,
            "git status",
            "as committed at HEAD",
            state,
            "uncommitted evidence is not evidence: commit it (git add dvc.lock reports && git commit) "
            "or restore the commit's (git checkout -- FILE; dvc checkout), then audit again",
        )
    return "commit"


def describe(scope: Scope) -> str:
    if scope == "workspace":
        return (
            "scope: the workspace this dvc repro produced, before its commit (a reviewer's `pappo audit` "
            "checks the evidence against the commit)"
        )
    return "scope: the evidence as committed at HEAD (dvc.lock, reports/base_model.json, reports/summary*)"


def lock_stages(text: str | bytes) -> dict[str, Any]:
    """The `stages` mapping of a dvc.lock's text ({} for an empty file); yaml.YAMLError if malformed."""
    return (yaml.load(text, Loader=YAML_LOADER) or {}).get("stages", {})
