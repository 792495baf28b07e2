"""Entry point of a sandboxed test run: apply resource limits, then hand over to pytest.

Runs as `python -B -m pappo.sandbox.child '<limits json>' <pytest args...>`; it imports nothing
heavy so that a run costs one interpreter start plus pytest.
"""

from __future__ import annotations

import json
import resource
import sys


def _limit(kind: int, value: int) -> None:
    try:
        resource.setrlimit(kind, (value, value))
    except (ValueError, OSError):  # a hard limit below ours: keep the stricter one
        pass


def main() -> int:
    limits = json.loads(sys.argv[1])
    mb = 1024 * 1024
    _limit(resource.RLIMIT_CPU, int(limits["cpu_s"]))
    _limit(resource.RLIMIT_AS, int(limits["memory_mb"]) * mb)
    _limit(resource.RLIMIT_FSIZE, int(limits["max_file_mb"]) * mb)
    _limit(resource.RLIMIT_NPROC, int(limits["max_procs"]))
    _limit(resource.RLIMIT_CORE, 0)
    # The nonce arrives on stdin, read before pytest captures it; the plugin keeps it in memory.
    nonce = sys.stdin.readline().strip()
    sys.stdin.close()
    import pytest

    from pappo.sandbox import pytest_plugin

    pytest_plugin.set_nonce(nonce)
    return int(pytest.main(sys.argv[2:], plugins=[pytest_plugin]))


if __name__ == "__main__":
    sys.exit(main())
