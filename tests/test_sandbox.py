"""Warm fork server: per-test outcomes over the authenticated channel, limits, faults, fallback."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from pathlib import Path

import pytest

from conftest import as_user, fixture_params, marked_processes, needs_namespaces, write_params
from pappo.config.data import SandboxParams
from pappo.sandbox import pool as pool_module
from pappo.sandbox import prefault
from pappo.sandbox.pool import SandboxPool
from pappo.sandbox.runner import run_many, run_tests

PKG = {"pkg/__init__.py": b"def add(a, b):\n    return a + b\n"}
FAST = SandboxParams(timeout_s=10, test_timeout_s=2, memory_mb=512, workers=2)


def suite(body: str, pkg: str = "") -> dict[str, bytes]:
    files = {**PKG, "tests/test_pkg.py": ("from pkg import add\n" + body).encode()}
    if pkg:
        files["pkg/__init__.py"] += pkg.encode()
    return files


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(FAST) as p:
        yield p


def test_outcomes_per_test_and_failure_details(pool: SandboxPool):
    run = pool.run(
        suite(
            "def test_ok():\n    assert add(1, 2) == 3\n"
            "def test_wrong():\n    assert add(2, 2) == 5\n"
            "def test_crash():\n    add(1, 'a')\n"
        )
    )
    assert run.outcomes == {
        "tests/test_pkg.py::test_crash": "failed",
        "tests/test_pkg.py::test_ok": "passed",
        "tests/test_pkg.py::test_wrong": "failed",
    }
    wrong = run.failures["tests/test_pkg.py::test_wrong"]
    assert wrong["compare"] == {"op": "==", "left": "4", "right": "5"} and wrong["test_line"] == 5
    assert wrong["raised_in_test_file"] and wrong["def_line"] == 4
    crash = run.failures["tests/test_pkg.py::test_crash"]
    assert crash["exc_type"] == "TypeError" and not crash["raised_in_test_file"]
    assert run.infra_error is None and not run.tamper and not run.ended_early


def test_failure_texts_mask_memory_addresses_which_differ_from_run_to_run(pool: SandboxPool):
    """Seen in lrucache-003: the same wrong edit, graded in two pools, showed two addresses; the
    policy reads the failure text, so the same seed trained differently. A hex literal stays."""
    run = pool.run(
        suite(
            "class Box:\n    pass\n"
            "def test_in():\n    assert 'long' in [Box()]\n"
            "def test_raise():\n    raise ValueError(repr(Box()))\n"
            "def test_hex():\n    raise ValueError('flag 0x10 set')\n"
        )
    )
    f = run.failures
    assert f["tests/test_pkg.py::test_in"]["compare"]["right"] == "[<test_pkg.Box object at 0x...>]"
    assert f["tests/test_pkg.py::test_raise"]["message"] == "<test_pkg.Box object at 0x...>"
    assert f["tests/test_pkg.py::test_hex"]["message"] == "flag 0x10 set"


def test_requested_ids_missing_and_skipped(pool: SandboxPool):
    run = pool.run(
        suite("import pytest\n@pytest.mark.skip\ndef test_skip():\n    pass\n"),
        ["tests/test_pkg.py::test_skip", "tests/test_pkg.py::test_gone"],
    )
    assert run.outcomes == {
        "tests/test_pkg.py::test_gone": "missing",
        "tests/test_pkg.py::test_skip": "skipped",
    }
    assert run.failing() == sorted(run.outcomes)  # skipped and missing never count as passing


def test_printed_success_and_exit_zero_do_not_pass(pool: SandboxPool):
    """A run that prints a pytest success line and exits 0 early has no outcome: the test fails."""
    run = pool.run(
        suite("import os\ndef test_ok():\n    print('1 passed')\n    os._exit(0)\n"),
        ["tests/test_pkg.py::test_ok"],
    )
    assert run.outcomes == {"tests/test_pkg.py::test_ok": "missing"}
    assert run.ended_early and run.infra_error is None  # the policy's doing, not a sandbox fault


def test_collection_error_in_one_module_keeps_the_others(pool: SandboxPool):
    files = {**suite("def test_ok():\n    assert add(1, 1) == 2\n"), "tests/test_broken.py": b"import nope\n"}
    run = pool.run(files)
    assert run.outcomes == {"tests/test_pkg.py::test_ok": "passed"}
    assert run.collect_errors == ["tests/test_broken.py"]


def test_conftest_and_ini_in_workspace_are_ignored(pool: SandboxPool):
    files = {
        **suite("def test_wrong():\n    assert add(2, 2) == 5\n"),
        "tests/conftest.py": b"import pytest\n@pytest.hookimpl(hookwrapper=True)\n"
        b"def pytest_runtest_makereport(item, call):\n    o = yield\n    o.get_result().outcome = 'passed'\n",
        "pytest.ini": b"[pytest]\naddopts = -p no:python\n",
    }
    assert pool.run(files).outcomes == {"tests/test_pkg.py::test_wrong": "failed"}


def test_hanging_test_times_out_alone(pool: SandboxPool):
    run = pool.run(
        suite("def test_hang():\n    while True:\n        pass\ndef test_ok():\n    assert add(1, 1) == 2\n")
    )
    assert run.outcomes == {"tests/test_pkg.py::test_hang": "timeout", "tests/test_pkg.py::test_ok": "passed"}


def test_run_timeout_ends_the_run():
    limits = FAST.model_copy(update={"timeout_s": 2.0, "test_timeout_s": 1.0})
    with SandboxPool(limits, workers=1) as p:
        start = time.monotonic()
        run = p.run(
            suite("import time\ntime.sleep(60)  # at collection: no per-test alarm\n"),
            ["tests/test_pkg.py::test_a"],
        )
    assert run.timed_out and run.outcomes == {"tests/test_pkg.py::test_a": "timeout"}
    assert time.monotonic() - start < limits.timeout_s + 3


def test_memory_limit_fails_the_test(pool: SandboxPool):
    run = pool.run(suite("def test_big():\n    x = bytearray(900 * 1024 * 1024)\n    assert len(x) > 0\n"))
    assert run.outcomes == {"tests/test_pkg.py::test_big": "failed"}
    assert run.failures["tests/test_pkg.py::test_big"]["exc_type"] == "MemoryError"


def test_parallel_runs_keep_order(pool: SandboxPool):
    good = suite("def test_a():\n    assert add(1, 1) == 2\n")
    bad = suite("def test_a():\n    assert add(1, 1) == 3\n")
    runs = pool.run_many([(good, None), (bad, None), (good, None), (bad, None)])
    assert [r.outcomes["tests/test_pkg.py::test_a"] for r in runs] == ["passed", "failed", "passed", "failed"]


def test_module_level_helpers_use_a_shared_pool():
    runs = run_many([(suite("def test_a():\n    assert add(1, 1) == 2\n"), None)] * 2, FAST)
    assert [r.passing() for r in runs] == [["tests/test_pkg.py::test_a"]] * 2
    assert run_tests(suite("def test_a():\n    assert 0\n"), FAST).failing() == ["tests/test_pkg.py::test_a"]


@pytest.mark.parametrize("path", ["../evil.py", "/etc/evil.py", "a/../../evil.py", ".tmp"])
def test_paths_outside_the_workspace_are_refused(pool: SandboxPool, path: str):
    with pytest.raises(ValueError, match="escapes the workspace"):
        pool.run({path: b""})


def test_forged_channel_records_are_tampering(pool: SandboxPool):
    """Bytes written to the result pipe without the run's key are detected, never counted."""
    forge = (
        "import os\nfor fd in range(3, 20):\n    try:\n"
        '        os.write(fd, b\'{"kind": "outcome", "nodeid": "tests/test_pkg.py::test_a", \'\n'
        '                 b\'"outcome": "passed", "seq": 1}\\tbeef\\n\')\n    except OSError:\n        pass\n'
    )
    run = pool.run(suite("def test_a():\n    assert add(1, 1) == 3\n", pkg=forge))
    assert run.tamper and "forged" in run.tamper[0]
    assert run.outcomes.get("tests/test_pkg.py::test_a") != "passed"


def test_replacing_runner_machinery_is_tampering(pool: SandboxPool):
    patch = "import _pytest.runner\n_pytest.runner.call_and_report = lambda *a, **k: None\n"
    run = pool.run(suite("def test_a():\n    assert add(1, 1) == 3\n", pkg=patch))
    assert any("runner.call_and_report" in t for t in run.tamper), run.tamper
    assert "passed" not in run.outcomes.values()


def test_replacing_the_failure_text_masker_is_tampering(pool: SandboxPool):
    """The masker rewrites every failure text the policy reads; code that swaps it is caught."""
    patch = (
        "import pappo.sandbox.pytest_plugin as p\np._mask_addresses = lambda repl, text: 'all tests pass'\n"
    )
    run = pool.run(suite("def test_a():\n    assert add(1, 1) == 3\n", pkg=patch))
    assert any("_mask_addresses" in t for t in run.tamper), run.tamper
    assert "passed" not in run.outcomes.values()


def test_rebinding_a_captured_function_of_the_plugin_is_tampering(pool: SandboxPool):
    """Code under test that rebinds the plugin's captured json.dumps would forge an authenticated
    pass: the integrity scan watches every callable global of the plugin, captured ones too."""
    patch = (
        "import pappo.sandbox.pytest_plugin as p\n_d = p._dumps\n"
        "def f(o, **k):\n    return _d({**o, 'outcome': 'passed'} if o.get('kind') == 'outcome' else o, **k)\n"
        "p._dumps = f\n"
    )
    run = pool.run(suite("def test_a():\n    assert add(1, 1) == 3\n", pkg=patch))
    assert run.tamper and run.outcomes.get("tests/test_pkg.py::test_a") != "passed", (
        run.outcomes,
        run.tamper,
    )


def test_worker_crash_is_an_infra_error_and_the_worker_is_replaced():
    with SandboxPool(FAST, workers=1) as p:
        victim = p._all[0].proc.pid
        files = suite("import time\ndef test_a():\n    time.sleep(1.5)\n")
        killer = os.fork()
        if killer == 0:  # kill the worker while it serves the run
            time.sleep(0.5)
            os.kill(victim, signal.SIGKILL)
            os._exit(0)
        run = p.run(files, ["tests/test_pkg.py::test_a"])
        os.waitpid(killer, 0)
        assert run.infra_error and "died" in run.infra_error
        assert run.outcomes == {"tests/test_pkg.py::test_a": "missing"}
        again = p.run(suite("def test_a():\n    assert add(1, 1) == 2\n"))
        assert again.passing() == ["tests/test_pkg.py::test_a"] and p._all[0].proc.pid != victim


def test_fallback_isolation_is_logged_and_still_grades(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="pappo.sandbox")
    with SandboxPool(FAST.model_copy(update={"isolation": "rlimits"}), workers=1) as p:
        run = p.run(
            suite("def test_a():\n    assert add(1, 1) == 2\ndef test_b():\n    assert add(1, 1) == 3\n")
        )
        hang = p.run(suite("def test_h():\n    while True:\n        pass\n"))
    assert p.isolation == "rlimits" and run.isolation == "rlimits"
    assert run.outcomes == {"tests/test_pkg.py::test_a": "passed", "tests/test_pkg.py::test_b": "failed"}
    assert hang.outcomes == {"tests/test_pkg.py::test_h": "timeout"}
    assert any("NOT contained" in r.getMessage() for r in caplog.records)


@needs_namespaces
def test_namespaces_are_used_where_available(pool: SandboxPool):
    assert pool.isolation == "namespaces"
    probe = (
        "import os, socket\ndef test_env():\n    assert os.getpid() == 1\n    assert os.getuid() != 0\n"
        "    try:\n        socket.socket(socket.AF_UNIX)\n        assert False, 'AF_UNIX allowed'\n"
        "    except PermissionError:\n        pass\n"
        "    assert os.listdir('/proc') and sorted(p for p in os.listdir('/proc') if p.isdigit()) == ['1']\n"
    )
    run = pool.run(suite(probe))
    assert run.outcomes == {"tests/test_pkg.py::test_env": "passed"}, run.failures


@needs_namespaces
def test_nothing_outlives_a_killed_runner(tmp_path):
    """SIGKILL the process that owns the pool mid-run: worker, run and its daemons all go away."""
    marker = f"zzkill{os.getpid()}"
    body = (
        f"import ctypes, os, time\ndef test_a():\n"
        f"    if os.fork() == 0:\n"
        f"        os.setsid()\n"
        f"        ctypes.CDLL(None).prctl(15, b'{marker}', 0, 0, 0)  # PR_SET_NAME: its /proc/PID/comm\n"
        f"        time.sleep(600)\n"
        f"    time.sleep(60)\n"
    )
    script = tmp_path / "owner.py"
    script.write_text(
        "import sys\nfrom pappo.config import SandboxParams\nfrom pappo.sandbox.pool import SandboxPool\n"
        f"pool = SandboxPool(SandboxParams(timeout_s=120, test_timeout_s=100, workers=1))\n"
        "print(pool._all[0].proc.pid, flush=True)\n"
        f"pool.run({suite(body)!r})\n"
    )
    import subprocess
    import sys

    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    worker = int(owner.stdout.readline())

    def alive(match: str | int) -> bool:
        if isinstance(match, str):
            return bool(marked_processes(match))
        try:
            return bool(open(f"/proc/{match}/cmdline", "rb").read())  # a zombie's is empty
        except OSError:
            return False

    deadline = time.monotonic() + 20
    while not alive(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive(marker), "the run never started its daemon"
    owner.kill()
    owner.wait()
    deadline = time.monotonic() + 10
    while (alive(marker) or alive(worker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(marker) and not alive(worker)


def test_hung_worker_is_an_infra_error(monkeypatch: pytest.MonkeyPatch):
    import pappo.sandbox.pool as pool_module

    monkeypatch.setattr(pool_module, "GRACE_S", 1.0)
    limits = FAST.model_copy(update={"timeout_s": 1.0, "test_timeout_s": 1.0})
    with SandboxPool(limits, workers=1) as p:
        hung = p._all[0].proc.pid
        os.kill(hung, signal.SIGSTOP)  # the worker stops answering (internal timeout)
        start = time.monotonic()
        run = p.run(suite("def test_a():\n    assert add(1, 1) == 2\n"), ["tests/test_pkg.py::test_a"])
        assert run.infra_error and "hung" in run.infra_error and time.monotonic() - start < 10
        assert run.outcomes == {"tests/test_pkg.py::test_a": "missing"}
        assert p.run(suite("def test_a():\n    assert add(1, 1) == 2\n")).passing() == [
            "tests/test_pkg.py::test_a"
        ]
        assert p._all[0].proc.pid != hung


def test_library_module_named_like_a_test_is_not_tampering(pool: SandboxPool):
    """pytest rewrites any imported `test_*.py`; only files under tests/ must match the trusted copy."""
    files = {
        **suite("from pkg.test_helpers import twice\ndef test_a():\n    assert twice(2) == 4\n"),
        "pkg/test_helpers.py": b"def twice(x):\n    return 2 * x\n",
    }
    run = pool.run(files)
    assert run.outcomes == {"tests/test_pkg.py::test_a": "passed"} and run.tamper == []


def test_test_file_changed_during_the_run_is_tampering():
    """Rewriting a not-yet-imported test file from library code is caught (fallback: no read-only
    tests): the audit hook refuses the write; the rewrite cache's content check stands behind it."""
    evil = (
        "import pathlib\np = pathlib.Path('tests/test_z.py')\n"
        "try:\n    p.write_text('def test_b():\\n    pass\\n')\nexcept OSError:\n    pass\n"
    )
    files = {
        **suite("def test_a():\n    assert add(1, 1) == 2\n", pkg=evil),
        "tests/test_z.py": b"def test_b():\n    assert False\n",
    }
    with SandboxPool(FAST.model_copy(update={"isolation": "rlimits"}), workers=1) as p:
        run = p.run(files)
    assert any("tests/test_z.py" in t for t in run.tamper), run.tamper
    assert run.outcomes.get("tests/test_z.py::test_b") != "passed"


FAIL_CLOSED_POOL = """
from pappo.config import SandboxParams
from pappo.io import PappoError
from pappo.sandbox import pool as pool_module
from pappo.sandbox import prefault
from pappo.sandbox.pool import SandboxPool
try:
    SandboxPool(SandboxParams(workers=1))
    print("auto: started")
except PappoError as e:
    print("auto:", e)
with SandboxPool(SandboxParams(workers=1, isolation="rlimits")) as p:
    run = p.run({"tests/test_a.py": b"def test_a():\\n    pass\\n"})
    print("rlimits:", run.isolation, run.outcomes)
"""


def test_auto_fails_closed_where_no_namespace_is_possible(unprivileged_home, tmp_path):
    """An ordinary account on a machine without user namespaces: no silent fallback, a clear way out."""
    pool = as_user(unprivileged_home, ["-c", FAIL_CLOSED_POOL], no_userns=True)
    assert pool.returncode == 0, pool.stderr[-2000:]
    lines = dict(line.split(": ", 1) for line in pool.stdout.splitlines())
    assert "cannot contain untrusted code" in lines["auto"] and "sandbox.isolation: rlimits" in lines["auto"]
    assert "user namespaces" in lines["auto"]  # the cause, named
    assert lines["rlimits"].startswith("rlimits ")  # asked for explicitly, it runs and says so
    params = write_params(fixture_params(tmp_path), unprivileged_home / "params.yaml")
    task_id = json.loads(Path(fixture_params(tmp_path).tasks.repofix.manifest).read_text().splitlines()[0])[
        "instance_id"
    ]
    cli = as_user(
        unprivileged_home,
        ["-m", "pappo.cli", "run-tests", "--task", task_id, "--params", str(params)],
        no_userns=True,
    )
    assert cli.returncode == 1 and "cannot contain untrusted code" in cli.stderr, cli.stderr[-2000:]
    assert "sandbox.isolation: rlimits" in cli.stderr and cli.stdout == ""


def _add_checks(*pairs: tuple[int, int]) -> dict:
    calls = [
        {"kind": "function", "target": "pkg:add", "args": [["int", a], ["int", b]], "kwargs": []}
        for a, b in pairs
    ]
    return {"roots": ["pkg"], "checks": calls, "always": True}


def test_hidden_specs_go_once_per_worker_and_are_resent_when_it_lacks_them():
    """Specs travel by digest after the first run (`pool._spec_ref`); the answers never change,
    whether the spec came whole, by reference to what the run's child inherited, or resent."""
    files = suite("def test_ok():\n    assert add(1, 2) == 3\n")
    with SandboxPool(FAST.model_copy(update={"workers": 1})) as p:
        worker = p._all[0]
        spec = _add_checks((1, 2), (-5, 5))
        first, second, third = (p.run(files, None, spec).hidden for _ in range(3))
        assert first == second == third == [{"r": ["int", 3]}, {"r": ["int", 0]}]
        assert len(worker.specs_sent) == 1
        other = _add_checks((40, 2))
        worker.specs_sent.add(pool_module._spec_ref(other))  # the pool believes it sent it; it did not
        assert p.run(files, None, other).hidden == [{"r": ["int", 42]}]
        assert p.run(files, None, other).hidden == [{"r": ["int", 42]}]
        assert len(worker.specs_sent) == 2


def test_spec_ref_names_the_content():
    a, b = _add_checks((1, 2)), _add_checks((1, 2))
    assert pool_module._spec_ref(a) == pool_module._spec_ref(b)  # equal specs, distinct objects
    assert pool_module._spec_ref(a) != pool_module._spec_ref(_add_checks((1, 3)))
    assert pool_module._spec_ref(a) != pool_module._spec_ref({**a, "always": False})


def test_prefault_reads_only_writable_private_mappings():
    maps = (
        "55d0a000-55d0b000 r--p 00000000 08:01 123 /usr/bin/python3.11\n"
        "55d0c000-55d0e000 rw-p 00002000 08:01 123 /usr/bin/python3.11\n"
        "55d0f000-55d30000 rw-p 00000000 00:00 0 [heap]\n"
        "7f00000000-7f00001000 rw-s 00000000 00:05 9 /dev/shm/x\n"
        "7f00002000-7f00003000 ---p 00000000 00:00 0\n"
        "7ffc000000-7ffc021000 rw-p 00000000 00:00 0 [stack]\n"
        "7ffc100000-7ffc104000 r--p 00000000 00:00 0 [vvar]\n"
        "7ffc104000-7ffc106000 rw-p 00000000 00:00 0 [vdso]\n"
        "7f00004000-7f00006000 rw-p 00000000 00:00 0\n"
    )
    assert prefault.writable_private(maps) == [
        (0x55D0C000, 0x55D0E000),
        (0x55D0F000, 0x55D30000),
        (0x7FFC000000, 0x7FFC021000),
        (0x7F00004000, 0x7F00006000),
    ]


def test_prefault_keeps_memory_as_it_was_and_yields_to_the_run():
    data = bytearray(os.urandom(1 << 20))
    before = bytes(data)
    r, w = os.pipe()
    try:
        prefault.populate_writable(until_readable=r)  # populates (or, on kernels < 5.14, does nothing)
        assert bytes(data) == before
        os.write(w, b"go")
        assert prefault.populate_writable(until_readable=r) == 0  # the run has arrived: stop at once
    finally:
        os.close(r)
        os.close(w)


def test_a_run_cannot_find_the_previous_run_on_its_stack():
    """The request a worker served before (here a clean reference tree, whose files a patch had read
    back through `traceback.walk_stack` with `capture_locals` and imported in place of a fix) must
    not be among the locals of any frame on the next child's stack (they are the forker's)."""
    import base64

    secret = b"VALUE = 'reference-answer'\n"
    probe = (
        "import traceback\n"
        "def test_the_stack_holds_no_earlier_request():\n"
        "    frames = traceback.StackSummary.extract(traceback.walk_stack(None), capture_locals=True)\n"
        "    assert '_obey' in [f.name for f in frames], 'the probe must reach the forker frames'\n"
        f"    leaked = [f.name for f in frames if {base64.b64encode(secret).decode()!r} in str(f.locals)]\n"
        "    assert not leaked, leaked\n"
    )
    with SandboxPool(FAST, workers=1) as one:
        one.run({**PKG, "pkg/mod.py": secret, "tests/test_pkg.py": b""})
        run = one.run({**PKG, "pkg/mod.py": b"VALUE = 'buggy'\n", "tests/test_pkg.py": probe.encode()})
    assert run.outcomes == {"tests/test_pkg.py::test_the_stack_holds_no_earlier_request": "passed"}, (
        run.failures
    )


def test_a_test_file_the_rewriter_cannot_take_fails_to_collect_and_the_worker_lives():
    """A test file whose assertion rewriting raises more than a SyntaxError (here the parser's
    RecursionError) is that module's collection error; the forker, which rewrote it first, must
    outlive it (it had died, and with it the worker: this run and the next were infra errors)."""
    deep = b"def test_deep():\n    x = 2 + " + b"-" * 5000 + b"1\n"
    ok = b"from pkg import add\n\ndef test_ok():\n    assert add(1, 2) == 3\n"
    with SandboxPool(FAST, workers=1) as one:
        worker = one._all[0].proc.pid
        first = one.run({**PKG, "tests/test_deep.py": deep, "tests/test_ok.py": ok})
        second = one.run({**PKG, "tests/test_ok.py": ok})
        assert one._all[0].proc.pid == worker, "the worker was replaced"
    assert first.infra_error is None and second.infra_error is None, (first.infra_error, second.infra_error)
    assert first.outcomes == {"tests/test_ok.py::test_ok": "passed"} and first.collect_errors == [
        "tests/test_deep.py"
    ]
    assert second.outcomes == {"tests/test_ok.py::test_ok": "passed"}
