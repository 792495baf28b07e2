"""The tuning history, read from the repository itself: how many configurations met each seed.

Every committed version of `dvc.lock` on the current history (`git log -- dvc.lock`) records, per
run stage `train@<seed>-<method>`, the params it ran with (every params section the stage lists,
whichever file held it: before 2026-12-04 `rl` was read from matrix.yaml) and the md5 of its base
checkpoint. A configuration is that pair; a
seed that carried more than one is a tuning seed, and a claim judged on it is exploratory: the best
of N configurations shows an effect by chance (Dodge et al. 2019, "Show your work": report how many
configurations were tried; Eimer, Lindauer & Raileanu 2023: tuning and test seeds separate).

The same history shows claims whose registered bar changed after run reports of their seeds were
committed (`git log -- params.yaml`). Without git history (a source tree from a zip, a shallow
clone) the audit says the history could not be read; it never guesses.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from pappo.config import load_params
from pappo.config.evidence import ClaimParams
from pappo.evidence.committed import lock_stages
from pappo.evidence.git_trees import cat_file, git_output

BAR_FIELDS: tuple[str, ...] = ("metric", "baseline", "min_delta", "min_seed_wins", "ci_rule")
TRAINED: tuple[str, ...] = ("rft", "grpo", "ppo", "pappo")
# The release's record of this history, at the bundle's top (a bundle's audit has no git to read it from)
HISTORY = "history.json"
# Where `pappo evidence import` keeps the bundle's history.json in a clone (git-ignored); the clone's
# audit checks it against the clone's own history.
IMPORTED_HISTORY = ".pappo/imported/history.json"


class ClaimEdit(BaseModel):
    """A claim whose bar differs from the one registered before run reports of its seeds existed."""

    model_config = ConfigDict(extra="forbid")
    claim: str
    registered: dict[str, Any] = Field(
        description="The bar in force when its seeds' run reports were first "
        "committed (or its first committed form, if registered later)."
    )
    now: dict[str, Any] = Field(description="The bar as params.yaml has it now.")
    commit: str = Field(description="The first commit that changed it after the evidence existed.")


class History(BaseModel):
    """What the repository's history says about the seeds and the claims."""

    model_config = ConfigDict(extra="forbid")
    readable: bool
    reason: str = Field(description="Why it could not be read, or what was read.")
    lock_versions: int = Field(
        description="Versions of dvc.lock read (committed ones, then the workspace's)."
    )
    configurations: dict[str, int] = Field(
        description="'<seed>/<method>' -> distinct configurations its train stage ran with over the history."
    )
    edits: list[ClaimEdit] = Field(description="Claims edited after evidence for their seeds existed.")


def unreadable(why: str) -> History:
    return History(
        readable=False,
        reason=f"history could not be read: {why}",
        lock_versions=0,
        configurations={},
        edits=[],
    )


def read_history(root: Path, seeds: Sequence[int], claims: Sequence[ClaimParams]) -> History:
    """Configurations per (seed, trained method) and claim edits, from `git log` of the repository `root`."""
    root = Path(root)
    try:
        shallow = git_output(root, "rev-parse", "--is-shallow-repository")
    except OSError:  # no git here
        shallow = None
    if shallow is None:
        return unreadable(f"{root} is not a git repository with commits (a source tree without history)")
    if shallow == "true":
        return unreadable("a shallow clone holds part of the history only; run `git fetch --unshallow`")
    log = git_output(
        root, "log", "--reverse", "--format=%x00%H", "--name-only", "--", "dvc.lock", "params.yaml"
    )
    commits = [(c.split("\n", 1)[0], c.split("\n")[1:]) for c in (log or "").split("\0") if c.strip()]
    if not any("dvc.lock" in files for _, files in commits):
        return unreadable("no commit of dvc.lock on the current history")
    wanted = [(c, f) for c, files in commits for f in ("dvc.lock", "params.yaml") if f in files]
    texts = dict(zip(wanted, cat_file(root, [f"{c}:{f}" for c, f in wanted])))
    configs: dict[str, set[str]] = {}
    edits = _Edits(claims, seeds)
    versions = 0
    for commit, files in commits:
        if "dvc.lock" in files and texts[commit, "dvc.lock"] is not None:
            stages = _stages(texts[commit, "dvc.lock"])
            versions += 1
            _add_configs(configs, stages, seeds)
            edits.see_lock(stages)
        if "params.yaml" in files and texts[commit, "params.yaml"] is not None:
            edits.see_params(commit, texts[commit, "params.yaml"])
    workspace = root / "dvc.lock"
    if workspace.is_file():  # the audit stage audits a lock not committed yet
        versions += 1
        _add_configs(configs, _stages(workspace.read_bytes()), seeds)
    counts = {key: len(found) for key, found in sorted(configs.items())}
    return History(
        readable=True,
        reason=f"{versions} versions of dvc.lock read from git",
        lock_versions=versions,
        configurations=counts,
        edits=edits.found(claims),
    )


def configuration(stage: dict[str, Any]) -> str:
    """A train stage's configuration: its recorded params (the sections of every params file merged,
    so moving a section between files is no new configuration) and its base checkpoint's md5."""
    base = [d.get("md5") for d in stage.get("deps", []) if d.get("path") == "models/base"]
    files, params = stage.get("params"), {}
    for name, sections in sorted(files.items()) if isinstance(files, dict) else []:
        params.update(sections if isinstance(sections, dict) else {name: sections})
    return json.dumps({"params": params, "base": base}, sort_keys=True)


def _add_configs(configs: dict[str, set[str]], stages: dict[str, Any], seeds: Sequence[int]) -> None:
    for s in seeds:
        for m in TRAINED:
            stage = stages.get(f"train@{s}-{m}")
            if isinstance(stage, dict):
                configs.setdefault(f"{s}/{m}", set()).add(configuration(stage))


class _Edits:
    """Follows each claim's bar through params.yaml's versions and notes edits after evidence."""

    def __init__(self, claims: Sequence[ClaimParams], seeds: Sequence[int]) -> None:
        self.seeds = list(seeds)
        self.methods = {c.id: c.method for c in claims}
        self.evidence: set[str] = set()  # claims whose seeds had run reports committed
        self.registered: dict[str, dict[str, Any]] = {}
        self.current: dict[str, dict[str, Any]] = {}
        self.changed_at: dict[str, str] = {}

    def see_lock(self, stages: dict[str, Any]) -> None:
        for cid, method in self.methods.items():
            if cid not in self.evidence and all(_locked(stages, s, method) for s in self.seeds):
                self.evidence.add(cid)

    def see_params(self, commit: str, text: bytes) -> None:
        for cid, bar in _bars(text).items():
            if cid not in self.registered or cid not in self.evidence:
                self.registered[cid] = bar  # before the evidence existed a bar may still change
            elif bar != self.registered[cid] and cid not in self.changed_at:
                self.changed_at[cid] = commit
            self.current[cid] = bar

    def found(self, claims: Sequence[ClaimParams]) -> list[ClaimEdit]:
        out = []
        for c in claims:
            now = c.model_dump(mode="json", include=set(BAR_FIELDS))
            first = self.registered.get(c.id)
            if first is not None and c.id in self.changed_at and now != first:
                out.append(ClaimEdit(claim=c.id, registered=first, now=now, commit=self.changed_at[c.id]))
        return out


def _locked(stages: dict[str, Any], seed: int, method: str) -> bool:
    """Run reports of (seed, method) are in this lock: its train stage, or base's run stage, has outputs."""
    stage = stages.get(f"base_run@{seed}" if method == "base" else f"train@{seed}-{method}")
    return isinstance(stage, dict) and bool(stage.get("outs"))


def _bars(text: bytes) -> dict[str, dict[str, Any]]:
    """{claim id: its bar} of one params.yaml version ({} when it has none or does not parse)."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return {}
    claims = data.get("claims") if isinstance(data, dict) else None
    bars = {}
    for c in claims if isinstance(claims, list) else []:
        if isinstance(c, dict) and "id" in c:
            defaults = ClaimParams.model_fields
            bars[str(c["id"])] = {f: c.get(f, defaults[f].default) for f in BAR_FIELDS}
    return bars


def _stages(text: bytes) -> dict[str, Any]:
    try:
        return lock_stages(text)
    except yaml.YAMLError:
        return {}  # a version that does not parse carried no readable configuration


def claim_history(
    history: History, claim: ClaimParams, baseline: str, seeds: Sequence[int]
) -> tuple[bool, str]:
    """(exploratory, what the history says) for one claim on `seeds`."""
    if not history.readable:
        return False, history.reason
    methods = [m for m in (claim.method, baseline) if m in TRAINED]
    counts = {s: max((history.configurations.get(f"{s}/{m}", 0) for m in methods), default=0) for s in seeds}
    edit = next((e for e in history.edits if e.claim == claim.id), None)
    said = f"configurations in history per seed: {', '.join(f'seed {s}: {n}' for s, n in counts.items())}"
    tuned = [s for s, n in counts.items() if n > 1]
    parts, exploratory = [said], False
    if tuned:
        exploratory = True
        parts.append(
            f"{max(counts.values())} configurations were evaluated on seeds {', '.join(map(str, tuned))}"
        )
    if edit is not None:
        exploratory = True
        parts.append(
            f"bar edited after run reports of its seeds were committed (at {edit.commit[:12]}): "
            f"registered {_show(edit.registered)}, now {_show(edit.now)}"
        )
    return exploratory, "; ".join(parts)


def _show(bar: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {bar[k]}" for k in BAR_FIELDS if k in bar) + "}"


def recorded(root: Path) -> bytes:
    """The history as a release records it (history.json), for params.yaml's seeds and claims, read
    from `root`'s git now: a bundle's audit has no git, yet can label claims exploratory or not."""
    params = load_params(Path(root) / "params.yaml")
    return (read_history(root, params.seeds, params.claims).model_dump_json(indent=2) + "\n").encode()


def from_record(data: bytes | None, where: str) -> History:
    """A release's history.json, labelled as a record (not re-read from git); unreadable if absent."""
    if data is None:
        return unreadable(f"{where} carries no history.json (a bundle made before releases recorded it)")
    try:
        history = History.model_validate_json(data)
    except ValueError as e:
        return unreadable(f"{where}/history.json is not a tuning history ({str(e).splitlines()[0]})")
    return history.model_copy(update={"reason": f"recorded by the release from git: {history.reason}"})


def disagreement(record: History, here: History) -> str | None:
    """What differs between a release's record and this clone's own history (None: they agree)."""
    if record.readable != here.readable:
        return f"record readable={record.readable}, this clone's history readable={here.readable}"
    if record.configurations != here.configurations:
        diff = sorted(
            k
            for k in record.configurations.keys() | here.configurations.keys()
            if record.configurations.get(k) != here.configurations.get(k)
        )
        return (
            f"configurations per seed differ at {', '.join(diff[:4])} (record "
            f"{[record.configurations.get(k) for k in diff[:4]]}, here {[here.configurations.get(k) for k in diff[:4]]})"
        )
    if [e.claim for e in record.edits] != [e.claim for e in here.edits]:
        return f"claim edits differ: record {[e.claim for e in record.edits]}, here {[e.claim for e in here.edits]}"
    return None
