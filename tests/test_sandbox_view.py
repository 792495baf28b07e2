"""What a run sees of the host's files: system software and the interpreter, not the task references.

Seen at c01f744: a patch whose module loaded the clean module from the project's
`data/repofix/repos/<family>/` (found through `sys.path`) with `runpy` passed bitbloom-001's
visible tests and all 120 hidden checks without fixing anything. The project folder (/work/main)
was in view, read-only, because only /tmp, homes and /run were covered.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, needs_namespaces
from pappo.config.data import SandboxParams
from pappo.sandbox.pool import SandboxPool
from test_sandbox import PKG

LIMITS = SandboxParams(timeout_s=20, test_timeout_s=10, memory_mb=512, workers=1)


@pytest.fixture
def planted() -> Path:
    """A clean-tree copy outside the system folders: a new top-level folder where the test may
    create one (as root), else the clone's own fixtures (in view before the fix wherever the
    clone is not under /tmp or a home)."""
    if os.access("/", os.W_OK):
        top = Path(f"/pappo-view-{uuid.uuid4().hex[:12]}")
        shutil.copytree(FIXTURES / "repofix" / "repos", top / "repos")
        yield top / "repos"
        shutil.rmtree(top)
    else:
        yield FIXTURES / "repofix" / "repos"


def probe(paths: dict[str, Path]) -> dict[str, bytes]:
    """A test per path that passes when the run cannot see it."""
    body = "import os\n" + "".join(
        f"def test_{name}_out_of_view():\n    assert not os.path.exists({str(path)!r}), os.listdir({str(path)!r})\n"
        for name, path in paths.items()
    )
    return {**PKG, "tests/test_view.py": body.encode()}


def run_probe(isolation: str, paths: dict[str, Path]) -> dict[str, str]:
    with SandboxPool(LIMITS.model_copy(update={"isolation": isolation})) as pool:
        run = pool.run(probe(paths))
    assert run.infra_error is None and not run.tamper, run
    return run.outcomes


@needs_namespaces
def test_a_run_sees_no_reference_tree_kept_outside_system_folders(planted: Path):
    paths = {
        "planted": planted,
        "project_fixtures": FIXTURES / "repofix" / "repos",
        "project_tests": ROOT / "tests",
    }
    outcomes = run_probe("namespaces", paths)
    assert outcomes == {f"tests/test_view.py::test_{n}_out_of_view": "passed" for n in paths}
    # The control: without the mount view (rlimits) the same probe sees the planted tree, so the
    # probe can fail and the files are really there.
    control = run_probe("rlimits", {"planted": planted})
    assert control == {"tests/test_view.py::test_planted_out_of_view": "failed"}


@needs_namespaces
def test_what_the_interpreter_needs_stays_in_view():
    """The covers keep the virtual environment, the package and the system's software."""
    import pappo

    needed = {"package": Path(pappo.__file__).parent, "stdlib": Path(os.__file__).parent, "usr": Path("/usr")}
    outcomes = run_probe("namespaces", needed)
    assert outcomes == {f"tests/test_view.py::test_{n}_out_of_view": "failed" for n in needed}
