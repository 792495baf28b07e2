"""dvc.lock's stages against the dvc.yaml that defines them (its matrix and foreach expanded with
params.yaml, as DVC names them: `train@100`).

DVC leaves a stage's entry in dvc.lock after dvc.yaml stops defining it (runs of seeds since
dropped from the matrix). Such stale entries are not evidence of the commit: a release does not
pack their outputs, an import and a bundle's check do not ask for them, and each says which it
ignored (`stale_note`).
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import yaml

from pappo.evidence.committed import lock_stages
from pappo.evidence.dvc_cache import LockedOut, locked_outs
from pappo.io import atomic_write_text


def _text(value: Any) -> str:
    """A matrix or foreach value as DVC names a stage by it (booleans lower-case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _values(value: Any, params: dict[str, Any]) -> list[Any] | None:
    """A matrix axis: a list, or `${name}` read from params.yaml (DVC's default vars); None if neither."""
    if isinstance(value, str) and (m := re.fullmatch(r"\$\{\s*([\w.]+)\s*\}", value)):
        value = params
        for key in m[1].split("."):
            value = value.get(key) if isinstance(value, dict) else None
    return list(value) if isinstance(value, list | dict) else None


def _expanded(name: str, body: dict[str, Any], params: dict[str, Any]) -> list[str] | None:
    """The stage names one dvc.yaml stage stands for (`train@0-ppo`); None if not resolvable here."""
    if "matrix" in body:
        axes = body["matrix"] if isinstance(body["matrix"], dict) else {}
        names = [""]
        for key, value in axes.items():
            values = _values(value, params)
            if values is None:
                return None
            frag = [f"{key}{i}" if isinstance(v, dict | list) else _text(v) for i, v in enumerate(values)]
            names = [f"{n}-{f}" if n else f for n in names for f in frag]
        return [f"{name}@{n}" for n in names]
    if "foreach" in body:  # a list by its values, a mapping by its keys
        values = _values(body["foreach"], params)
        if values is None:
            return None
        return [f"{name}@{i if isinstance(v, dict | list) else _text(v)}" for i, v in enumerate(values)]
    return [name]


def stale(lock_text: str | bytes, dvc_yaml_text: str | bytes, params_text: str | bytes) -> list[str]:
    """dvc.lock's stages that dvc.yaml (matrix expanded with params.yaml) no longer defines, e.g.
    runs of seeds since dropped: DVC leaves them in the lock. [] when dvc.yaml cannot be read."""
    try:
        stages = (yaml.safe_load(dvc_yaml_text) or {}).get("stages")
        params = yaml.safe_load(params_text) or {}
    except (yaml.YAMLError, AttributeError):
        return []
    if not isinstance(stages, dict) or not stages:
        return []
    defined: set[str] = set()
    for name, body in stages.items():
        names = _expanded(
            str(name), body if isinstance(body, dict) else {}, params if isinstance(params, dict) else {}
        )
        if names is None:
            return []  # a stage not expanded here: nothing is called stale rather than evidence dropped
        defined.update(names)
    return sorted(set(lock_stages(lock_text)) - defined)


def stale_stages(root: Path) -> list[str]:
    """The stale stages of the checkout at `root` (dvc.lock against its dvc.yaml and params.yaml):
    the entries to prune from dvc.lock."""
    return stale(*lock_files(root))


def prune_lock(root: Path) -> list[str]:
    """Remove the stale stages' entries from the checkout's dvc.lock, the rest kept byte for byte
    (ruamel's round trip, as DVC writes it), written atomically; returns their names. Prune when
    the seeds change: DVC rewrites the whole lock after every stage it runs, so each stale entry
    slows every stage (35 of them cost ~2.5 s a stage, 2026-12-07)."""
    names = stale_stages(root)
    if names:
        from ruamel.yaml import YAML  # DVC's own YAML library (requirements.lock)

        path, rt = Path(root) / "dvc.lock", YAML()
        data = rt.load(path.read_text())
        for name in names:
            del data["stages"][name]
        text = io.StringIO()
        rt.dump(data, text)
        atomic_write_text(path, text.getvalue())
    return names


def lock_files(root: Path) -> tuple[bytes, bytes, bytes]:
    """A checkout's dvc.lock, dvc.yaml and params.yaml (b"" for one that is missing)."""
    paths = [Path(root) / f for f in ("dvc.lock", "dvc.yaml", "params.yaml")]
    lock, dvc_yaml, params = (p.read_bytes() if p.is_file() else b"" for p in paths)
    return lock, dvc_yaml, params


def current_outs(
    lock_text: str | bytes, dvc_yaml_text: str | bytes, params_text: str | bytes
) -> list[LockedOut]:
    """dvc.lock's outputs of the stages dvc.yaml defines (locked_outs less the stale stages')."""
    old = set(stale(lock_text, dvc_yaml_text, params_text))
    return [out for out in locked_outs(lock_text) if out.stage not in old]


def stale_note(names: list[str]) -> str:
    """One line naming the stale stages a tool ignored."""
    return (
        f"dvc.lock holds {len(names)} stages dvc.yaml no longer defines, ignored: {', '.join(names)} "
        "(prune them: pappo.evidence.defined_stages.prune_lock)"
    )
