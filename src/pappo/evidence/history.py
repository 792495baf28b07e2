"""The tuning history, read from the repository itself: how many configurations met each seed.

Every version of `dvc.lock` in a commit reachable from HEAD, a local branch or a DVC experiment
(history_walk.py: both sides of every merge, ordered by the commit graph, not by dates) records, per
run stage (`train@<seed>`; `train@<seed>-<method>` before 2026-12-07), the params it ran with (every params section the stage lists, whichever file held it: before
2026-12-04 `rl` was read from matrix.yaml) and the md5 of its base checkpoint. A configuration is
that pair; a seed that carried more than one is a tuning seed, and a claim judged on it is
exploratory: the best of N configurations shows an effect by chance (Dodge et al. 2019, "Show your
work": report how many configurations were tried; Eimer, Lindauer & Raileanu 2023: tuning and test
seeds separate). A configuration tried on a branch merged with `-s ours`, on a branch never merged
or in a `dvc exp run` counts: it was tried.

The same commits' params.yaml show post-hoc claims. Evidence for a claim exists at a commit when it
or an ancestor holds a committed run report of any published seed of its method or its baseline
(best_non_ppo: base, rft and grpo). A claim is exploratory when its bar (every field but its id)
differs from the one its evidence's first commits' parents carried and a commit holding the evidence
changed it (a merge that takes a bar edited on a branch, however dated, is such a commit), when it
was first registered where the evidence already was (a claim registered in the commit that brings
the run reports counts: git cannot show it came first; a renamed claim is a new one unless its bar
is the old id's unchanged), or when the published seeds list was chosen after runs of its seeds were
seen (history_seeds.py). The params audited (possibly not committed) are the last version read, a
child of HEAD. Without git history (a source tree from a zip, a shallow clone) the audit says the
history could not be read; it never guesses.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import islice
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from pappo.config import load_params
from pappo.config.evidence import ClaimParams
from pappo.evidence.committed import YAML_LOADER, lock_stages
from pappo.evidence.git_trees import git_output
from pappo.evidence.history_seeds import SeedChange, published_seeds, ran_seeds, seed_changes
from pappo.evidence.history_walk import WORKSPACE, Version, first, lineage, reach, read_versions, walk
from pappo.evidence.json_diff import MISSING, differences
from pappo.evidence.printable import one_line
from pappo.experiment.report import run_stage

# Every field of a claim but its id: any of them changed after the evidence changes what is tested
BAR_FIELDS: tuple[str, ...] = (
    "metric",
    "baseline",
    "min_delta",
    "min_seed_wins",
    "ci_rule",
    "method",
    "direction",
    "needs_gpu",
)
TRAINED: tuple[str, ...] = ("rft", "grpo", "ppo", "pappo")
NON_PPO: tuple[str, ...] = ("base", "rft", "grpo")  # what best_non_ppo may be
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
        description="The bar in force when the first run report of its seeds was "
        "committed (or its first committed form, if registered later)."
    )
    now: dict[str, Any] = Field(description="The bar as params.yaml has it now.")
    commit: str = Field(
        description="The first commit that changed it after the evidence existed ('': not committed)."
    )


class LateClaim(BaseModel):
    """A claim first registered when run reports of its seeds were already committed: post hoc."""

    model_config = ConfigDict(extra="forbid")
    claim: str
    commit: str = Field(
        description="The commit that first registered it ('': none, only the params audited)."
    )
    evidence: str = Field(
        description="The commit of the first run report of a published seed of its method or baseline."
    )
    dropped: list[str] = Field(
        default_factory=list, description="Claims that commit removed (the old id of a renamed claim)."
    )


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
    late: list[LateClaim] = Field(
        default_factory=list,
        description="Claims first registered after evidence for their seeds existed (absent from older records).",
    )
    seed_changes: list[SeedChange] = Field(
        default_factory=list,
        description="Post-hoc changes of the published seeds list since it was last set to seeds none "
        "of which had run (absent from older records).",
    )
    removed: list[str] = Field(
        default_factory=list,
        description="Claims registered while evidence for them existed and gone from the params "
        "audited: the family judged together shrank after results (absent from older records).",
    )


def unreadable(why: str) -> History:
    return History(
        readable=False,
        reason=f"history could not be read: {why}",
        lock_versions=0,
        configurations={},
        edits=[],
    )


def read_history(root: Path, seeds: Sequence[int], claims: Sequence[ClaimParams]) -> History:
    """Configurations per (seed, trained method), claim edits, late claims and post-hoc changes of the
    seeds list, from the commits reachable from HEAD, a local branch or a DVC experiment in the
    repository `root` (history_walk.py; configurations from all, the rest from HEAD's lineage);
    `seeds` and `claims` (the params audited) are read as a last version, a child of HEAD, with the
    workspace's dvc.lock."""
    root = Path(root)
    try:
        shallow = git_output(root, "rev-parse", "--is-shallow-repository")
    except OSError:  # no git here
        shallow = None
    if shallow is None:
        return unreadable(f"{root} is not a git repository with commits (a source tree without history)")
    if shallow == "true":
        return unreadable("a shallow clone holds part of the history only; run `git fetch --unshallow`")
    walked = walk(root)
    if walked is None or not any(c.lock for c in walked.commits):
        return unreadable("no commit of dvc.lock on the current history")
    commits = walked.commits
    audited = {"seeds": sorted(set(seeds)), "claims": {c.id: bar_of(c) for c in claims}}
    versions, stages = read_versions(root, walked, audited, _stages, _params)
    configs: dict[str, set[str]] = {}
    for found in stages.values():
        _add_configs(configs, found, seeds)
    runs = {k: (_reported(found, seeds), ran_seeds(found)) for k, found in stages.items()}
    versions = lineage(versions)  # configurations count from every ref; the rest is HEAD's story
    reported = reach(versions, lambda v: runs[v.lock][0] if v.lock else frozenset())
    ran = reach(versions, lambda v: runs[v.lock][1] if v.lock else frozenset())
    graph = _Claims(versions, reported)
    judged = [graph.judge(c.id) for c in claims]
    return History(
        readable=True,
        reason=f"{len(stages)} versions of dvc.lock read from git ({len(commits)} commits walked)",
        lock_versions=len(stages),
        configurations={key: len(found) for key, found in sorted(configs.items())},
        edits=[j[0] for j in judged if j[0] is not None],
        late=[j[1] for j in judged if j[1] is not None],
        seed_changes=seed_changes(versions, ran),
        removed=graph.removed(),
    )


def _reported(stages: dict[str, Any], seeds: Sequence[int]) -> frozenset[str]:
    """The methods with a run report of a published seed in one dvc.lock."""
    return frozenset(m for m in ("base", *TRAINED) if any(_locked(stages, s, m) for s in seeds))


def configuration(stage: dict[str, Any]) -> str:
    """A train stage's configuration: its recorded params (the sections of every params file merged,
    so moving a section between files is no new configuration) and its base checkpoint's md5."""
    base = [d.get("md5") for d in stage.get("deps", []) if d.get("path") == "models/base"]
    files, params = stage.get("params"), {}
    for name, sections in sorted(files.items()) if isinstance(files, dict) else []:
        params.update(sections if isinstance(sections, dict) else {name: sections})
    return json.dumps({"params": params, "base": base}, sort_keys=True)


def run_entries(stages: dict[str, Any], seed: int, method: str) -> list[dict[str, Any]]:
    """The lock's entries of stages that made run (seed, method): `train@<seed>` (every method on the
    seed, since 2026-12-07) and the older layouts' `train@<seed>-<method>` (base too, before it had
    its own stage) and `base_run@<seed>`. All of them: DVC keeps an older entry beside the new one
    until it is pruned, and a configuration recorded in either was run."""
    older = [f"train@{seed}-{method}"] + ([f"base_run@{seed}"] if method == "base" else [])
    names = (run_stage(seed, method), *older)
    return [stages[n] for n in names if isinstance(stages.get(n), dict)]


def _add_configs(configs: dict[str, set[str]], stages: dict[str, Any], seeds: Sequence[int]) -> None:
    for s in seeds:
        for m in TRAINED:
            for stage in run_entries(stages, s, m):
                configs.setdefault(f"{s}/{m}", set()).add(configuration(stage))


class _Claims:
    """Each claim's bar through every version of params.yaml on the commit graph; an audited claim's
    evidence exists at a version when it or an ancestor holds a run report of a published seed of a
    method any version of the claim compares (`reported`: per version, those methods)."""

    def __init__(self, versions: Sequence[Version], reported: dict[str, frozenset[str]]) -> None:
        self.versions, self.reported = versions, reported
        self.bars = {v.commit: v.params["claims"] if v.params else {} for v in versions}
        self.names: dict[str, dict[str, str]] = {}  # version -> claim id -> the id first registered
        for v in versions:
            self.names[v.commit] = {cid: self._name(v, cid, bar) for cid, bar in self.bars[v.commit].items()}

    def _name(self, v: Version, cid: str, bar: dict[str, Any]) -> str:
        """A claim that appears where a parent's claim leaves, with the same bar, is that one renamed."""
        kept = [self.names[p][cid] for p in v.parents if cid in self.names.get(p, {})]
        renamed = [
            self.names[p][o]
            for p in v.parents
            for o, b in self.bars.get(p, {}).items()
            if o not in self.bars[v.commit] and b == bar
        ]
        return (kept or renamed or [cid])[0]

    def removed(self) -> list[str]:
        """Claims (first ids) in a version that held evidence for them, absent from the params audited:
        deleting one after results makes Holm's family smaller and every other claim's test easier."""
        kept = set(self.names[WORKSPACE].values())
        gone = {
            self.names[v.commit][cid]
            for v in self.versions
            for cid, bar in self.bars[v.commit].items()
            if self.names[v.commit][cid] not in kept and self.reported[v.commit] & compared(bar)
        }
        return sorted(gone)

    def judge(self, cid: str) -> tuple[ClaimEdit | None, LateClaim | None]:
        """The audited claim's edit after its evidence and its late registration (None: none)."""
        key = self.names[WORKSPACE][cid]
        bar = {c: b for c, bars in self.bars.items() for n, b in bars.items() if self.names[c][n] == key}
        methods = set().union(*(compared(b) for b in bar.values()))
        ev = {v.commit for v in self.versions if self.reported[v.commit] & methods}
        # where the evidence begins; what was in force before it is what their parents carried
        starts = [v for v in self.versions if v.commit in ev and not any(p in ev for p in v.parents)]
        if not starts:
            return None, None
        registered, late = [bar[p] for s in starts for p in s.parents if p in bar], None
        if any(not any(p in bar for p in s.parents) for s in starts):
            late = self._late(cid, bar, ev, starts[0].commit)
            registered.append(bar[late.commit])
        begins = {s.commit for s in starts}
        # an edit: a version with the evidence whose bar differs from a parent's that had it too, or
        # from any parent's where it brings the evidence (a merge taking a backdated branch's bar)
        edited = first(
            self.versions,
            lambda v: (
                v.commit in ev
                and v.commit in bar
                and any(
                    p in bar and bar[p] != bar[v.commit] and (p in ev or v.commit in begins)
                    for p in v.parents
                )
            ),
        )
        now = bar[WORKSPACE]
        other = next((b for b in registered if b != now), None)
        if edited is None or other is None:  # changed and changed back: the bar judged is the registered one
            return None, late
        return ClaimEdit(claim=cid, registered=other, now=now, commit=edited.commit), late

    def _late(self, cid: str, bar: dict[str, Any], ev: set[str], evidence: str) -> LateClaim:
        """Registered where the evidence already was: the first such version that carries it."""
        # at worst the params audited: they carry the claim, and HEAD (their parent) the evidence
        reg = first(self.versions, lambda v: v.commit in ev and v.commit in bar) or self.versions[-1]
        here = self.bars[reg.commit]
        gone = dict.fromkeys(o for p in reg.parents for o in self.bars.get(p, {}) if o not in here)
        return LateClaim(claim=cid, commit=reg.commit, evidence=evidence, dropped=list(gone))


def compared(bar: dict[str, Any]) -> set[str]:
    """The methods whose run reports are evidence for a claim with this bar."""
    baseline = bar.get("baseline")
    return {str(bar.get("method"))} | (set(NON_PPO) if baseline == "best_non_ppo" else {str(baseline)})


def bar_of(claim: ClaimParams) -> dict[str, Any]:
    return claim.model_dump(mode="json", include=set(BAR_FIELDS))


def _locked(stages: dict[str, Any], seed: int, method: str) -> bool:
    """Run reports of (seed, method) are in this lock: its train stage, or base's run stage, has outputs."""
    return any(stage.get("outs") for stage in run_entries(stages, seed, method))


def _params(text: bytes | None) -> dict[str, Any] | None:
    """{"seeds": published seeds or None, "claims": {claim id: its bar}} of one params.yaml version
    (None: absent or does not parse)."""
    try:
        data = yaml.load(text, Loader=YAML_LOADER) if text is not None else None  # C: ~35 versions
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None
    claims = data.get("claims")
    bars, defaults = {}, ClaimParams.model_fields
    for c in claims if isinstance(claims, list) else []:
        if isinstance(c, dict) and "id" in c:
            bars[str(c["id"])] = {f: c.get(f, defaults[f].default) for f in BAR_FIELDS}
    return {"seeds": published_seeds(data), "claims": bars}


def _stages(text: bytes) -> dict[str, Any]:
    try:
        return lock_stages(text)
    except yaml.YAMLError:
        return {}  # a version that does not parse carried no readable configuration


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
    return history.model_copy(
        update={"reason": f"recorded by the release from git: {one_line(history.reason)}"}  # a bundle's text
    )


def with_record(here: History, record: History) -> History:
    """This clone's history with each count raised to the record's where the release saw more tries
    (its machine's branches and experiments), so the clone judges the claims as the release did."""
    keys = here.configurations.keys() | record.configurations.keys()
    most = {k: max(here.configurations.get(k, 0), record.configurations.get(k, 0)) for k in sorted(keys)}
    return here.model_copy(update={"configurations": most})


def disagreement(record: History, here: History, clone: bool = False) -> str | None:
    """What differs between a release's record and another reading of the history (None: they
    agree). Within a bundle the two are one reading and must be equal; against a `clone`'s own git
    the record may count more configurations (the publisher's branches and DVC experiments are not
    in a clone), never fewer."""
    if record.readable != here.readable:
        return f"record readable={record.readable}, this clone's history readable={here.readable}"
    if clone:
        fewer = sorted(k for k, n in here.configurations.items() if record.configurations.get(k, 0) < n)
        if fewer:
            return (
                f"the record counts fewer configurations per seed than this clone's git shows at "
                f"{', '.join(fewer[:4])} (record {[record.configurations.get(k, 0) for k in fewer[:4]]}, "
                f"here {[here.configurations[k] for k in fewer[:4]]})"
            )
    elif diff := list(islice(differences(record.configurations, here.configurations), 4)):
        theirs, ours = ([None if v is MISSING else v for v in side] for side in list(zip(*diff))[1:])
        where = ", ".join(path.removeprefix(".") for path, _, _ in diff)
        return f"configurations per seed differ at {where} (record {theirs}, here {ours})"
    if [e.claim for e in record.edits] != [e.claim for e in here.edits]:
        return f"claim edits differ: record {[e.claim for e in record.edits]}, here {[e.claim for e in here.edits]}"
    # records made before late claims and seed changes were read carry neither: nothing to compare
    if "late" in record.model_fields_set and [e.claim for e in record.late] != [e.claim for e in here.late]:
        return f"late claims differ: record {[e.claim for e in record.late]}, here {[e.claim for e in here.late]}"
    ours, theirs = ([c.commit for c in h.seed_changes] for h in (here, record))
    if "seed_changes" in record.model_fields_set and theirs != ours:
        return f"post-hoc changes of the seeds list differ: record {theirs}, here {ours}"
    return None
