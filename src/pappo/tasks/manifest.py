"""Read and write task manifests (JSONL, one Task per line) with errors that name the line."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from pappo.io import PappoError, atomic_write_text
from pappo.tasks.models import Task


def read_manifest(path: Path) -> tuple[list[Task], list[str]]:
    """Parse every line; return the tasks that parsed and one message per bad line."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise PappoError(f"{path}: manifest not found; run `pappo synthesize` to create it") from None
    tasks: list[Task] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"{where}: malformed JSON ({e.msg} at column {e.colno}); fix the line")
            continue
        label = raw.get("instance_id", "?") if isinstance(raw, dict) else "?"
        try:
            task = Task.model_validate(raw)
        except ValidationError as e:
            for err in e.errors():
                field = ".".join(str(p) for p in err["loc"]) or "<line>"
                hint = "remove it" if err["type"] == "extra_forbidden" else "fix it"
                errors.append(f"{where}: task {label}: field '{field}': {err['msg']}; {hint}")
            continue
        if task.instance_id in seen:
            errors.append(
                f"{where}: task {task.instance_id}: duplicate instance_id (first on line "
                f"{seen[task.instance_id]}); give each task a unique id"
            )
            continue
        seen[task.instance_id] = n
        tasks.append(task)
    if not tasks and not errors:
        errors.append(f"{path}: manifest has no tasks")
    return tasks, errors


def write_manifest(path: Path, tasks: list[Task]) -> None:
    lines = [task.model_dump_json() for task in tasks]
    atomic_write_text(Path(path), "\n".join(lines) + "\n")
