"""What a run can read of earlier runs in its own memory: nothing.

Seen at a21a6ce: children were forked from the worker that had read every earlier request and
its records. A run that scanned its own writable mappings (`/proc/self/maps`, `ctypes.string_at`;
the names reached through `string.Formatter().get_field`, which the static scan did not know)
found the tree served just before it, as sent (base64) and decoded, and that run's records:
the clean reference tree and its hidden-check answers, when that run was the reference.
Children now come from the worker's forker, which never holds a run's data (`sandbox/forker.py`).
"""

from __future__ import annotations

import base64
import hashlib
import secrets

from pappo.config.data import SandboxParams
from pappo.sandbox.pool import SandboxPool
from test_sandbox import PKG

LIMITS = SandboxParams(timeout_s=60, test_timeout_s=50, memory_mb=1024, workers=1)

# Scans every writable mapping for each mark: a prefix, then `n` bytes whose sha256 is known. The
# probe holds only prefixes and digests, so its own memory cannot match a mark of another run.
PROBE = """
import ctypes, hashlib
from pkg.mod import VALUE

MARKS = {marks!r}

def found_marks():
    seen = set()
    for line in open("/proc/self/maps").read().splitlines():
        span, perms = line.split()[:2]
        lo, hi = (int(x, 16) for x in span.split("-"))
        if not perms.startswith("rw") or hi - lo > 1 << 28:
            continue
        data = ctypes.string_at(lo, hi - lo)
        for name, (prefix, n, digest) in MARKS.items():
            at = data.find(prefix)
            while at >= 0 and name not in seen:
                tail = data[at + len(prefix) : at + len(prefix) + n]
                if hashlib.sha256(tail).hexdigest() == digest:
                    seen.add(name)
                at = data.find(prefix, at + 1)
    return sorted(seen)

def test_memory_holds_no_earlier_run():
    seen = found_marks()
    assert "own tree" in seen, "the probe must find its own run's tree, or it proves nothing"
    assert seen == ["own tree"], seen
"""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_run_cannot_read_an_earlier_run_from_its_memory():
    earlier, own = secrets.token_hex(16).encode(), secrets.token_hex(16).encode()
    head = b"VALUE = 'TOKEN<"  # 15 bytes: its base64 is a prefix of the file's, the token's follows
    marks = {
        "own tree": (b"TOKEN<", 32, _sha(own)),
        "earlier tree": (b"TOKEN<", 32, _sha(earlier)),
        "earlier request": (base64.b64encode(head), 40, _sha(base64.b64encode(earlier[:30]))),
        "earlier records": (b"REC<", 32, _sha(earlier[::-1])),
    }
    reference = {
        **PKG,
        "pkg/mod.py": head + earlier + b">'\n",
        "tests/test_ref.py": b"from pkg.mod import VALUE\n\ndef test_ref():\n    assert 0, 'REC<' + VALUE[6:-1][::-1]\n",
    }
    probe = {
        **PKG,
        "pkg/mod.py": head + own + b">'\n",
        "tests/test_pkg.py": PROBE.format(marks=marks).encode(),
    }
    with SandboxPool(LIMITS, workers=1) as one:  # one worker: it served the earlier run first
        first = one.run(reference)
        assert first.outcomes == {"tests/test_ref.py::test_ref": "failed"}, first.failures
        assert "REC<" + earlier[::-1].decode() in first.failures["tests/test_ref.py::test_ref"]["message"]
        run = one.run(probe)
    assert run.outcomes == {"tests/test_pkg.py::test_memory_holds_no_earlier_run": "passed"}, run.failures
