"""A sandbox worker that fails to start says why: its own stderr (here the ModuleNotFoundError of
a package the worker cannot import, as when packages sit only on the parent's PYTHONPATH) is in
the error, with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from pappo.config.data import SandboxParams
from pappo.io import PappoError
from pappo.sandbox import pool, worker


def test_a_worker_that_cannot_import_pydantic_reports_its_traceback(tmp_path: Path, monkeypatch):
    fake = tmp_path / "pydantic"
    fake.mkdir()
    # shadows the real package on the worker's path only: pappo.io imports pydantic first thing
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'pydantic' (stand-in)\")\n"
    )
    real = worker.worker_env

    def broken() -> dict[str, str]:
        env = real()
        return env | {"PYTHONPATH": f"{tmp_path}:{env['PYTHONPATH']}"}

    monkeypatch.setattr(worker, "worker_env", broken)
    with pytest.raises(PappoError) as err:
        pool.SandboxPool(SandboxParams(isolation="rlimits"), workers=1)
    msg = str(err.value)
    assert msg.startswith("sandbox worker did not start: no answer; its stderr ends:")
    assert "ModuleNotFoundError: No module named 'pydantic' (stand-in)" in msg
    assert "Traceback" in msg and "pip install" in msg


def test_the_message_without_stderr_is_the_answer_alone():
    assert worker.start_failure_message("no answer", "") == "sandbox worker did not start: no answer"
    assert "pip install" not in worker.start_failure_message("no answer", "Killed")
