"""The run's audit hook (`sandbox/guard.py`): code made at run time is refused, ordinary files are not."""

from __future__ import annotations

import importlib.util
import marshal
import os
from pathlib import Path

import pytest

from pappo.config.data import SandboxParams
from pappo.sandbox import guard
from pappo.sandbox.pool import SandboxPool

W = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


@pytest.fixture()
def place(tmp_path: Path) -> tuple[str, frozenset[str], tuple[str, ...]]:
    """A workspace with one scanned source and one test, and a root of runner code beside it."""
    ws, lib = tmp_path / "ws", tmp_path / "lib"
    for path in (ws / "pkg" / "a.py", ws / "tests" / "test_a.py", lib / "json" / "__init__.py"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    real = os.path.realpath(ws)
    return real, frozenset(guard._py_files(real)), guard._code_roots(real, [real, str(lib)], [])


def refused(event: str, args: tuple, place) -> str | None:
    return guard.refusal(event, args, *place)


def code(filename: str):
    return compile("", filename, "exec")


def test_writing_an_importable_file_is_refused_and_data_files_are_not(place):
    ws = place[0]
    for path in (
        f"{ws}/pkg/_gen.py",
        f"{ws}/pkg/x.pyc",
        f"{ws}/pkg/__pycache__/a.cpython-311.pyc",
        "/tmp/m.so",
    ):
        assert "could import" in refused("open", (path, "w", W), place), path
        assert "could import" in refused("open", (path, None, os.O_RDWR), place), path  # os.open
        assert refused("open", (path, "r", os.O_CLOEXEC), place) is None  # reading is the loader's
    assert "could import" in refused("open", (f"{ws}/pkg/a.py", "a", os.O_APPEND), place)
    assert "could import" in refused("open", (Path(f"{ws}/site.pth"), "x", 0), place)
    for path in (f"{ws}/out.txt", f"{ws}/pkg/data.json", "/tmp/blob.zip"):
        assert refused("open", (path, "w", W), place) is None
    assert refused("open", (3, "w", 0), place) is None  # an open fd: its path was checked when opened


def test_renaming_or_linking_onto_an_importable_name_is_refused(place):
    ws = place[0]
    for event in ("os.rename", "os.link", "os.symlink"):
        assert "could import" in refused(event, (f"{ws}/d.txt", f"{ws}/pkg/b.py", -1, -1), place)
        assert refused(event, (f"{ws}/d.txt", f"{ws}/e.txt", -1, -1), place) is None


def test_only_scanned_sources_and_the_runners_code_may_run(place):
    ws, _, roots = place
    lib = next(r for r in roots if r.endswith("lib"))
    for name in (
        f"{ws}/pkg/a.py",
        f"{ws}/tests/test_a.py",
        "pkg/a.py",
        f"{lib}/json/__init__.py",
        "<string>",
    ):
        assert refused("exec", (code(name),), place) is None, name
    for name in (f"{ws}/pkg/_gen.py", f"{ws}/.tmp/x.py", "/nowhere/x.py", f"{ws}/blob.zip/gen.py"):
        assert "did not read" in refused("exec", (code(name),), place), name


def test_code_objects_and_programs_made_at_run_time_are_refused(place):
    def f() -> None: ...

    assert "code object" in refused("code.__new__", (b"", "x.py", "f"), place)
    assert "__code__" in refused("object.__setattr__", (f, "__code__", f.__code__), place)
    assert refused("object.__setattr__", (f, "__name__", "g"), place) is None
    for event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn"):
        assert "program" in refused(event, ("x",), place)
    assert refused("os.fork", (), place) is None  # a forked child keeps the hook
    for path in ("/proc/self/mem", "/proc/42/task/43/mem"):
        assert "process memory" in refused("open", (path, "r", 0), place)
    assert refused("open", ("/proc/self/status", "r", 0), place) is None


def test_roots_never_hold_the_workspace():
    roots = guard._code_roots("/tmp/runs/ws", ["/", "/tmp", "/tmp/runs/ws", "/usr/lib/python3.11"], [])
    assert "/usr/lib/python3.11" in roots or os.path.realpath("/usr/lib/python3.11") in roots
    assert not any(guard._under("/tmp/runs/ws", r) for r in roots)


# ---- through the sandbox: the hook is installed in every run, before the code under test imports

BUGGY = b"def add(a, b):\n    return a - b\n"
FIXED = b"def add(a, b):\n    return a + b\n"
TEST = b"from pkg import add\n\ndef test_add():\n    assert add(1, 1) == 2\n"
# What the code under test does at import; each would make the test pass with the bug still on disk.
ATTACKS = {
    "module written and imported": (
        "import os as _o\n"
        "with open(_o.path.join(_o.path.dirname(__file__), '_gen.py'), 'wb') as _f:\n"
        f"    _f.write(bytes.fromhex('{FIXED.hex()}'))\n"
        "from ._gen import add\n",
        "wrote a file Python could import",
    ),
    "function code replaced": ("add.__code__ = (lambda a, b: a + b).__code__\n", "__code__"),
    # the second review: text no scan read, compiled by the library's private helpers
    "text compiled by dataclasses' helper": (
        "import dataclasses as _d\n"
        f"add = _d._create_fn('add', ['a', 'b'], [bytes.fromhex('{b'return a + b'.hex()}').decode()])\n",
        "compiled text through dataclasses",
    ),
    "text compiled by dis' helper": (
        "import dis as _dis\n"
        f"add = type(lambda: 0)(_dis._try_compile(bytes.fromhex('{FIXED.hex()}').decode(), '<x>'), {{}})\n",
        "compiled text at run time",
    ),
    "other text compiled as a scanned file": (
        "_g = {}\n"
        f"type(lambda: 0)(__loader__.source_to_code(bytes.fromhex('{FIXED.hex()}'), __file__), _g)()\n"
        "add = _g['add']\n",
        "compiled other text than the file",
    ),
    "names injected into a dataclass": (
        "import dataclasses as _d\n"
        "class _C:\n    pass\n"
        f"_C.__annotations__ = {{bytes.fromhex('{b'x=print()'.hex()}').decode(): int}}\n"
        "_d.dataclass(_C)\n",
        "compiled text through dataclasses",
    ),
    "a string annotation that calls": (
        "import typing as _t\n"
        "def _f(x): pass\n"
        f"_f.__annotations__ = {{'x': bytes.fromhex('{b'print(1)'.hex()}').decode()}}\n"
        "_t.get_type_hints(_f)\n",
        "not a type",
    ),
    "program started": (
        "import subprocess, sys\n"
        "subprocess.run([sys.executable, '-c', 'pass'])\n"
        "def add(a, b):\n    return a + b\n",
        "started a program",
    ),
}


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(SandboxParams(timeout_s=20, test_timeout_s=5, memory_mb=512, workers=1)) as p:
        yield p


@pytest.mark.parametrize("name", list(ATTACKS))
def test_code_made_at_run_time_ends_the_run_as_tampering(pool: SandboxPool, name: str):
    attack, reason = ATTACKS[name]
    run = pool.run({"pkg/__init__.py": BUGGY + attack.encode(), "tests/test_pkg.py": TEST})
    assert any(t.startswith("audit hook: ") and reason in t for t in run.tamper), run.tamper
    assert run.outcomes.get("tests/test_pkg.py::test_add") != "passed"


def test_a_zip_archive_on_the_path_imports_nothing(pool: SandboxPool):
    """Bytecode in a zip whose code names itself "<string>" would pass the check of what runs; zip
    archives are not importable in a run (without that, this test passes the bug)."""
    code = compile(FIXED, "<string>", "exec")
    pyc = importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(code)
    attack = (
        "import io, sys, zipfile\n"
        "_b = io.BytesIO()\n"
        "with zipfile.ZipFile(_b, 'w') as _z:\n"
        f"    _z.writestr('gen.pyc', bytes.fromhex('{pyc.hex()}'))\n"
        "open('pkg/blob.bin', 'wb').write(_b.getvalue())\n"
        "sys.path.insert(0, 'pkg/blob.bin')\n"
        "from gen import add\n"
    )
    run = pool.run({"pkg/__init__.py": BUGGY + attack.encode(), "tests/test_pkg.py": TEST})
    assert run.outcomes.get("tests/test_pkg.py::test_add") != "passed", run.outcomes


def test_code_the_library_writes_from_names_runs(pool: SandboxPool):
    """What families do (dataclasses, namedtuples, string annotations, asyncio's import, which sets
    a coroutine flag on a code object) compiles text in the library: not refused."""
    lib = (
        "from __future__ import annotations\n"
        "import asyncio, collections, dataclasses, typing\n"
        "Pair = collections.namedtuple('Pair', 'a b')\n"
        "class Named(typing.NamedTuple):\n    a: int\n    b: 'typing.Optional[int]' = None\n"
        "@dataclasses.dataclass(frozen=True, order=True)\nclass Base:\n    a: int\n    b: list[int] = dataclasses.field(default_factory=list)\n"
        "@dataclasses.dataclass(frozen=True)\nclass Child(Base):\n    c: 'int | None' = None\n"
        "def add(a: int, b: 'int') -> int:\n    return a + b\n"
    )
    body = (
        "import asyncio, typing\nfrom pkg import Child, Named, Pair, add\n\ndef test_add():\n"
        "    assert typing.get_type_hints(add)['b'] is int and Named(1).b is None\n"
        "    assert asyncio.run(asyncio.sleep(0, 2)) == 2 and Pair(1, 2).b == 2\n"
        "    assert add(*Child(1, [1]).b, 1) == 2 and Child(1) < Child(2)\n"
    )
    run = pool.run({"pkg/__init__.py": lib.encode(), "tests/test_pkg.py": body.encode()})
    assert run.tamper == [] and run.outcomes == {"tests/test_pkg.py::test_add": "passed"}, (
        run.tamper,
        run.log_tail,
    )


def test_ordinary_runs_are_not_refused(pool: SandboxPool):
    """Data files written and read, a forked child, the fix imported: no tamper, the test passes."""
    body = (
        "import json, os\nfrom pkg import add\n\ndef test_add(tmp_path):\n"
        "    (tmp_path / 'data.json').write_text(json.dumps([1, 1]))\n"
        "    with open('pkg/out.txt', 'w') as f:  # the package's folder: writable\n        f.write('x')\n"
        "    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    os.waitpid(pid, 0)\n"
        "    assert add(*json.loads((tmp_path / 'data.json').read_text())) == 2\n"
    )
    run = pool.run(
        {"pkg/__init__.py": b"def add(a, b):\n    return a + b\n", "tests/test_pkg.py": body.encode()}
    )
    assert run.tamper == [] and run.outcomes == {"tests/test_pkg.py::test_add": "passed"}, (
        run.tamper,
        run.log_tail,
    )
