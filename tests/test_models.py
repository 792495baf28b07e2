"""Task contract: the cross-field rules say what is wrong."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from conftest import FIXTURES
from pappo.tasks.models import Task

BASE = json.loads((FIXTURES / "repofix" / "manifest.jsonl").read_text().splitlines()[0])


def make(**changes) -> Task:
    return Task.model_validate({**BASE, **changes})


def test_fixture_task_is_valid():
    assert make().instance_id == BASE["instance_id"]


def test_parametrised_test_ids_with_spaces_are_accepted():
    task = make(PASS_TO_PASS=[*BASE["PASS_TO_PASS"], "tests/test_core.py::test_x[1, 5]"])
    assert "tests/test_core.py::test_x[1, 5]" in task.PASS_TO_PASS


def test_class_based_test_ids_are_accepted():
    """unittest.TestCase methods and pytest classes (nested too) are collected as File::Class::test."""
    ids = ["tests/test_core.py::TestMean::test_empty", "tests/test_core.py::TestA::TestB::test_x[1]"]
    assert set(ids) <= set(make(PASS_TO_PASS=[*BASE["PASS_TO_PASS"], *ids]).PASS_TO_PASS)


def test_test_ids_pytest_collects_are_accepted():
    """Hyphens in test file names and Unicode identifiers are what pytest collects too."""
    ids = [
        "tests/test_core-v2.py::test_area",
        "tests/test_geom.py::test_größe",
        "tests/sub/test_x.py::Tést::t_1",
    ]
    assert set(ids) <= set(make(PASS_TO_PASS=[*BASE["PASS_TO_PASS"], *ids]).PASS_TO_PASS)
    for bad in ("tests/test core.py::test_x", "tests/test_x.py::1st", "src/test_x.py::test_x"):
        with pytest.raises(ValidationError, match="is not of the form"):
            make(PASS_TO_PASS=[*BASE["PASS_TO_PASS"], bad])


@pytest.mark.parametrize(
    "changes,needle",
    [
        ({"repo": "other"}, "must equal family"),
        ({"instance_id": "other-001"}, "must start with"),
        ({"test_patch": "--- a/x\n"}, "test_patch must be empty"),
        ({"FAIL_TO_PASS": []}, "at least 1 item"),
        ({"PASS_TO_PASS": [BASE["FAIL_TO_PASS"][0]]}, "both FAIL_TO_PASS and PASS_TO_PASS"),
        ({"FAIL_TO_PASS": ["test_core.py::test_mean"]}, "is not of the form"),
        ({"FAIL_TO_PASS": ["tests/test_core.py::"]}, "is not of the form"),
        ({"FAIL_TO_PASS": ["tests/test_core.py::TestA::"]}, "is not of the form"),
        ({"operator": "typo"}, "operator"),
        ({"difficulty": "trivial"}, "difficulty"),
        ({"files_sha256": {"/abs/path.py": "0" * 64}}, "relative path"),
    ],
)
def test_bad_fields_are_named(changes: dict, needle: str):
    with pytest.raises(ValidationError, match=needle):
        make(**changes)
