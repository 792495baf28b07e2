"""Bad input to the task and config commands: an error naming the file or flag, the field and the
fix, exit code 1, no traceback, and nothing written (the red-team's reproductions, made small)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, ROOT, write_params
from pappo.cli import app
from pappo.config import Params, apply_profile
from pappo.io import PappoError
from pappo.tasks import synthesize
from pappo.tasks.families import family_problems, list_families, load_tree
from pappo.tasks.store import TaskStore


def pappo(*args: str):
    return CliRunner().invoke(app, list(args))


def test_headroom_checks_its_flags_before_any_work(fx_params: Params, tmp_path: Path):
    params = str(write_params(fx_params, tmp_path / "params.yaml"))
    r = pappo("headroom", "--params", params, "--out", str(tmp_path))
    assert r.exit_code == 1 and r.stderr.startswith(f"error: --out {tmp_path}: is a folder; pass a file")
    (tmp_path / "afile").write_text("x")
    r = pappo("headroom", "--params", params, "--out", str(tmp_path / "afile" / "h.json"))
    assert r.exit_code == 1 and "afile is a file, so no folder can be made there" in r.stderr
    r = pappo("headroom", "--params", params, "--episodes", "-3")
    assert r.exit_code == 1 and r.stderr.startswith("error: --episodes -3: play at least 1 episode")
    r = pappo("headroom", "--params", params, "--k", "0")
    assert r.exit_code == 1 and r.stderr.startswith("error: --k 0: Input should be greater than or equal")


def test_profile_refuses_a_gpu_size_that_is_not_positive(tmp_path: Path):
    target = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", target)
    before = target.read_bytes()
    for size in ("0", "-8"):
        r = pappo("profile", str(ROOT / "profiles" / "qwen2.5-coder-7b.yaml"), "--params", str(target),
                  "--gpu-memory-gib", size)  # fmt: skip
        assert r.exit_code == 1 and r.stderr.startswith(f"error: --gpu-memory-gib {float(size)}: a GPU's")
    assert target.read_bytes() == before


@pytest.mark.parametrize("revision", [None, "0123456789abcdef0123456789abcdef01234567"])
def test_a_profile_section_written_as_a_scalar_is_named(tmp_path: Path, revision: str | None):
    overlay = tmp_path / "scalar.yaml"
    overlay.write_text("model: cuda\n")
    with pytest.raises(PappoError, match=r"scalar.yaml: model is 'cuda', not a mapping of model fields"):
        apply_profile(ROOT / "params.yaml", overlay, revision)


def test_a_manifest_whose_bug_patch_does_not_apply_is_named(tmp_path: Path):
    lines = (FIXTURES / "repofix" / "manifest.jsonl").read_text().splitlines()
    task = json.loads(lines[0])
    task["bug_patch"] = task["bug_patch"].replace("\n-", "\n-#", 1)  # a removed line the tree lacks
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("\n".join([json.dumps(task), *lines[1:]]) + "\n")
    store = TaskStore(manifest, FIXTURES / "repofix" / "repos")
    with pytest.raises(PappoError) as e:
        store.buggy(store.task(task["instance_id"]))
    assert str(e.value).startswith(f"{manifest}: task {task['instance_id']}: bug_patch does not apply")
    assert "re-run `pappo synthesize`" in str(e.value)


def test_every_committed_family_passes_the_layout_check():
    for repos in (ROOT / "data" / "repofix" / "repos", ROOT / "data" / "warmup" / "repos"):
        for family in list_families(repos):
            assert family_problems(repos / family, load_tree(repos / family)) == [], family


def _bad_family(repos: Path) -> Path:
    root = repos / "Tally-kit"
    for rel, data in {
        "src/tally/__init__.py": b"",
        "src/tally/stats.py": b"NAME = 'caf\xe9'\n",  # latin-1
        "test/test_stats.py": b"def test_x():\n    assert True\n",
        "tests/conftest.py": b"",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_synthesize_names_every_layout_problem_before_any_sandbox_run(fx_params: Params, tmp_path: Path,
                                                                     monkeypatch):  # fmt: skip
    repos = tmp_path / "repos"
    shutil.copytree(FIXTURES / "repofix" / "repos", repos)
    root = _bad_family(repos)

    def no_sandbox(*_):
        raise AssertionError("a sandbox run started before the layout check")

    monkeypatch.setattr(synthesize, "check_clean_tree", no_sandbox)
    tasks = fx_params.tasks.model_copy(
        update={
            "repofix": fx_params.tasks.repofix.model_copy(
                update={"repos": repos, "manifest": tmp_path / "manifest.jsonl"}
            )
        }
    )
    with pytest.raises(PappoError) as e:
        synthesize.synthesize_set(fx_params.model_copy(update={"tasks": tasks}), "repofix", log=print)
    message = str(e.value)
    assert message.startswith(f"{root}: not a valid family:")
    for needle in (
        "folder name 'Tally-kit': a family name is lower-case",
        "src/tally/stats.py: not UTF-8 (byte 11); re-save it as UTF-8",
        "no tests/test_*.py: the sandbox collects tests from tests/ only (found test/test_stats.py)",
        "move src/tally/ to tally/ (a src/ layout is not supported)",
        "tests/conftest.py: the sandbox runs pytest with --noconftest",
    ):
        assert needle in message
    assert not (tmp_path / "manifest.jsonl").exists()


def _write(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_synthesize_names_the_problems_of_every_family_at_once(
    fx_params: Params, tmp_path: Path, monkeypatch
):
    """All bad families in one message (not the first only), with the problems no sandbox run would
    explain: a byte-order mark, a module that does not parse, the family's own pytest configuration
    (ignored by the sandbox) and a package named like a standard-library module."""
    repos = tmp_path / "repos"
    shutil.copytree(FIXTURES / "repofix" / "repos", repos)
    test = b"def test_x():\n    assert True\n"
    first = _write(repos / "json", {
        "json/__init__.py": b"",
        "json/bom.py": b"\xef\xbb\xbfX = 1\n",
        "json/broken.py": b"def f(:\n    pass\n",
        "tests/test_x.py": test,
        "pytest.ini": b"[pytest]\naddopts = -p no:cacheprovider\n",
        "setup.cfg": b"[metadata]\nname = json\n",  # no pytest section: fine
    })  # fmt: skip
    second = _write(repos / "zkit", {
        "zkit/__init__.py": b"",
        "tests/test_x.py": test,
        "pyproject.toml": b"[project]\nname = 'zkit'\n\n[tool.pytest.ini_options]\nmarkers = ['slow']\n",
        "tox.ini": b"[pytest]\nxfail_strict = true\n",
    })  # fmt: skip
    monkeypatch.setattr(
        synthesize, "check_clean_tree", lambda *_: pytest.fail("sandbox run before the check")
    )
    sp = fx_params.tasks.repofix.model_copy(update={"repos": repos, "manifest": tmp_path / "manifest.jsonl"})
    params = fx_params.model_copy(update={"tasks": fx_params.tasks.model_copy(update={"repofix": sp})})
    with pytest.raises(PappoError) as e:
        synthesize.synthesize_set(params, "repofix", log=print)
    message = str(e.value)
    for needle in (
        f"{first}: not a valid family:",
        "json/bom.py: starts with a UTF-8 byte-order mark; re-save it as UTF-8 without BOM",
        "json/broken.py:1: does not parse as Python (",
        "pytest.ini: pytest configuration of the family's own",
        "json/: the package name 'json' is a standard-library module's; rename the package",
        f"{second}: not a valid family:",
        "pyproject.toml: pytest configuration of the family's own",
        "tox.ini: pytest configuration of the family's own",
    ):
        assert needle in message, message
    assert "setup.cfg" not in message
    assert not (tmp_path / "manifest.jsonl").exists()
