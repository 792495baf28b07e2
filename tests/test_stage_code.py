"""Each stage depends on the code it runs (src/pappo/stage_code.py): dvc.yaml's lists are exact,
and they cover every pappo module the stage's command loads when imported for real."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pappo import stage_code as sc

ROOT = Path(__file__).resolve().parents[1]
DVC = yaml.safe_load((ROOT / "dvc.yaml").read_text())
STAGES = sorted(DVC["stages"])


def code_deps(stage: str) -> set[str]:
    return sc.expand(ROOT, [d for d in DVC["stages"][stage]["deps"] if isinstance(d, str)])


@pytest.mark.parametrize("stage", STAGES)
def test_dvc_yaml_lists_exactly_the_code_the_stage_can_import(stage: str):
    want = {f"src/{f}" for f in sc.command_files(ROOT / "src", sc.stage_command(DVC, stage))}
    found = code_deps(stage)
    assert found == want, (
        f"dvc.yaml stage {stage}: missing {sorted(want - found)}, not imported {sorted(found - want)}; its deps "
        f"should be {sc.collapse(ROOT, sorted(want))}"
    )


@pytest.mark.parametrize("stage", STAGES)
def test_the_modules_really_loaded_are_all_dependencies(stage: str):
    """Import what the command imports, in a fresh interpreter: every pappo file in sys.modules is a
    dependency (the static list is generous: lazy imports count without running)."""
    start = sorted(
        sc._imports(sc.command_function(ROOT / "src", sc.stage_command(DVC, stage)), "pappo") | {"pappo.cli"}
    )
    code = (
        "import importlib, json, sys\n"
        f"for name in {start!r}:\n"
        "    try:\n        importlib.import_module(name)\n    except ModuleNotFoundError:\n        pass\n"
        "print(json.dumps(sorted(m.__file__ for n, m in sys.modules.items() if n.split('.')[0] == 'pappo' "
        "and getattr(m, '__file__', None))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = {Path(f).resolve().relative_to(ROOT).as_posix() for f in json.loads(out.stdout)}
    assert loaded and loaded <= code_deps(stage), sorted(loaded - code_deps(stage))


def test_training_code_is_not_a_dependency_of_the_summary_and_summary_code_not_of_training():
    train, report = code_deps("train"), code_deps("report")
    assert "src/pappo/evidence/summary.py" not in train and "src/pappo/evidence/plots.py" not in train
    assert "src/pappo/evidence/audit.py" not in train | report
    assert "src/pappo/rl/trainer.py" in train and "src/pappo/experiment/run.py" in train


def test_every_stage_runs_the_whole_cli_package_but_not_the_other_commands_imports():
    # `pappo report` loads every cli module (the commands register on import), yet only the report
    # command's function runs: run-tests' and train's libraries are no dependency of the report
    report = code_deps("report")
    cli = {f"src/pappo/cli/{m}.py" for m in ("__init__", "__main__", "app", "data", "train", "evidence")}
    assert cli <= report
    assert "src/pappo/tasks/run_tests.py" not in report and "src/pappo/experiment/run.py" not in report
    assert "src/pappo/tasks/run_tests.py" in {f"src/{f}" for f in sc.command_files(ROOT / "src", "run-tests")}


def test_a_train_receipt_binds_the_train_stage_code_and_the_environment():
    paths = sc.stage_code(ROOT, "train")
    assert set(paths) == {d for d in DVC["stages"]["train"]["deps"] if d.startswith("src/")} | set(
        sc.ENVIRONMENT
    )
    with pytest.raises(ValueError, match="no stage"):
        sc.stage_code(ROOT, "nope")


def test_imports_found_include_relative_lazy_and_by_name(tmp_path: Path):
    pkg = tmp_path / "pappo" / "sub"
    pkg.mkdir(parents=True)
    for rel in (
        "pappo/__init__.py",
        "pappo/sub/__init__.py",
        "pappo/sub/b.py",
        "pappo/c.py",
        "pappo/d.py",
        "pappo/e.py",
    ):
        (tmp_path / rel).write_text("")
    (pkg / "a.py").write_text(
        "from . import b\ndef f():\n    import pappo.c\n"
        "RUN = ['python', '-m', 'pappo.d']\nfrom ..e import thing\n"
    )
    files = {p.relative_to(tmp_path).as_posix() for p in sc.closure(tmp_path, {"pappo.sub.a"})}
    assert files == {
        "pappo/__init__.py",
        "pappo/sub/__init__.py",
        "pappo/sub/a.py",
        "pappo/sub/b.py",
        "pappo/c.py",
        "pappo/d.py",
        "pappo/e.py",
    }
