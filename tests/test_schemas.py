"""Committed JSON Schemas match the pydantic contracts; manifests and locks conform to them."""

from __future__ import annotations

import json

import jsonschema
import pytest

from conftest import FIXTURES, ROOT
from pappo.evidence.schemas import CONTRACTS, drift, render


def test_committed_schemas_do_not_drift():
    assert drift(ROOT / "schemas") == [], "run `pappo schemas` and commit schemas/"


def test_drift_is_detected(tmp_path):
    for name, model in CONTRACTS.items():
        (tmp_path / f"{name}.schema.json").write_text(render(model))
    assert drift(tmp_path) == []
    path = tmp_path / "task.schema.json"
    schema = json.loads(path.read_text())
    schema["properties"].pop("operator")
    path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
    assert drift(tmp_path) == [str(path)]


@pytest.mark.parametrize(
    "manifest",
    [
        ROOT / "data/repofix/manifest.jsonl",
        ROOT / "data/warmup/manifest.jsonl",
        FIXTURES / "repofix/manifest.jsonl",
    ],
)
def test_manifest_lines_conform_to_task_schema(manifest):
    schema = json.loads((ROOT / "schemas" / "task.schema.json").read_text())
    for line in manifest.read_text().splitlines():
        jsonschema.validate(json.loads(line), schema)


def test_tampered_task_fails_schema():
    schema = json.loads((ROOT / "schemas" / "task.schema.json").read_text())
    task = json.loads((FIXTURES / "repofix/manifest.jsonl").read_text().splitlines()[0])
    task["operator"] = "made_up"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(task, schema)
