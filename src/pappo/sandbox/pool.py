"""Runner side of the sandbox: a pool of warm fork-server workers serving test runs in parallel.

Each worker (`server.py`) is a separate process started without torch. A worker that crashes,
hangs past the run's deadline or answers garbage is killed and replaced; the run it was serving
comes back as an `infra_error` (a fault of the sandbox, never of the policy).
"""

from __future__ import annotations

import atexit
import base64
import hashlib
import json
import logging
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from pappo.config.data import SandboxParams
from pappo.io import PappoError
from pappo.sandbox.channel import parse_records
from pappo.sandbox.worker import Worker, fail_closed_message

log = logging.getLogger("pappo.sandbox")
Outcome = Literal["passed", "failed", "error", "skipped", "timeout", "missing"]
GRACE_S = 30.0  # beyond a run's own deadline, how long a worker may take to answer


@dataclass
class TestRun:
    """Result of one test run. `outcomes` holds every collected (or requested) test id."""

    __test__ = False  # not a pytest test class

    outcomes: dict[str, Outcome]
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)
    collect_errors: list[str] = field(default_factory=list)
    # node id -> the tail of pytest's report for it (messages only: never hashed or stored)
    collect_messages: dict[str, str] = field(default_factory=dict)
    duration_s: float = 0.0
    timed_out: bool = False
    infra_error: str | None = None
    log_tail: str = ""
    tamper: list[str] = field(default_factory=list)  # runtime evidence of reaching for the runner
    isolation: str = ""
    ended_early: bool = False  # the run stopped before pytest finished (exit, crash, kill)
    hidden: list[dict[str, Any]] | None = None  # outcomes of the hidden checks, if any were sent
    trace: list[dict[str, Any]] = field(default_factory=list)  # entry calls per test (trace runs)
    # Per test: assert site -> [left, right] exact operand types of its `==`/`!=` (`sandbox.typed`).
    types: dict[str, dict[str, list[list[str]]]] = field(default_factory=dict)

    def failing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o != "passed")

    def passing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o == "passed")

    def describe(self, limit: int = 3) -> str:
        """Why this run is not a clean pass, for a person: whatever the sandbox knows of it (the
        deadline, the sandbox's error, collect errors with their text, tampering, up to `limit`
        tests that did not pass with their outcome and exception)."""
        parts = ["the run timed out (sandbox.timeout_s)"] if self.timed_out else []
        if self.infra_error:
            parts.append(f"sandbox error: {self.infra_error}")
        for nodeid in self.collect_errors[:limit]:
            why = _error_lines(self.collect_messages.get(nodeid, ""))
            parts.append(
                f"{nodeid or 'the test session'} could not be collected" + (f" ({why})" if why else "")
            )
        parts += [f"stopped as tampering: {t}" for t in self.tamper[:limit]]
        for t in self.failing()[:limit]:
            parts.append(f"{t} {_outcome_text(self.outcomes[t], self.failures.get(t))}")
        if len(self.failing()) > limit:
            parts.append(f"and {len(self.failing()) - limit} more tests not passing")
        if not self.outcomes and not parts:
            parts.append("no tests were collected")
        return "; ".join(parts) or "all tests passed"


def _outcome_text(outcome: str, failure: dict[str, Any] | None) -> str:
    if outcome == "timeout":
        return "timed out (sandbox.test_timeout_s)"
    exc = (
        f": {failure.get('exc_type')}: {_error_lines(str(failure.get('message') or ''), 1)}"
        if failure
        else ""
    )
    return f"{outcome}{exc}".rstrip(": ")


def _error_lines(text: str, n: int = 3) -> str:
    """The lines of a pytest report that say what went wrong ('E   ...'), else its last lines."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln.removeprefix("E").strip() for ln in lines if ln.startswith("E ")]
    return " / ".join((errors or lines[-n:])[:n])[:400]


class SandboxPool:
    """`limits.workers` warm workers; `run_many` spreads runs over them and keeps the order."""

    def __init__(self, limits: SandboxParams, workers: int | None = None) -> None:
        self.limits = limits
        self.size = workers or limits.workers
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._all: list[Worker] = []
        self._lock = threading.Lock()
        self._broken: str | None = None  # set when a dead worker could not be replaced
        with ThreadPoolExecutor(self.size) as ex:  # start in parallel: each start imports pytest
            started = [ex.submit(Worker, limits) for _ in range(self.size)]
        failed = [f.exception() for f in started if f.exception() is not None]
        self._all = [f.result() for f in started if f.exception() is None]
        if failed:  # never leave the workers that did start running
            self.close()
            raise failed[0]
        for worker in self._all:
            self._idle.put(worker)
        self.isolation = self._all[0].isolation
        for note in dict.fromkeys(n for w in self._all for n in w.notes):  # once per pool, in order
            (log.warning if "NOT contained" in note or "cannot" in note else log.info)("sandbox: %s", note)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            workers, self._all = self._all, []
        for worker in workers:
            worker.close()

    def run(
        self,
        files: Mapping[str, bytes],
        test_ids: Sequence[str] | None = None,
        hidden: Mapping[str, Any] | None = None,
        trace: Mapping[str, Any] | None = None,
    ) -> TestRun:
        """One run; `hidden` checks run after the tests, `trace` records entry calls (`sandbox.checks`)."""
        for rel in files:  # a caller's mistake, not a sandbox fault: refuse before sending
            parts = rel.split("/")
            if rel.startswith("/") or ".." in parts or "" in parts or rel in (".", ".tmp"):
                raise ValueError(f"file path {rel!r} escapes the workspace or is not a plain relative path")
        payload = {
            "files": {p: base64.b64encode(d).decode() for p, d in files.items()},
            "limits": {
                k: getattr(self.limits, k)
                for k in ("timeout_s", "test_timeout_s", "cpu_s", "memory_mb", "max_procs", "max_file_mb")
            },
        }
        if trace is not None:
            payload["trace"] = dict(trace)
        ref = None if hidden is None else _spec_ref(hidden)
        worker = self._next_idle()
        start = time.monotonic()
        reply = worker.request(
            payload | _hidden_fields(worker, hidden, ref), timeout=self.limits.timeout_s + GRACE_S
        )
        if reply is not None and reply.get("unknown_hidden_ref"):  # the worker let it go: send it whole
            worker.specs_sent.discard(reply["unknown_hidden_ref"])
            reply = worker.request(
                payload | _hidden_fields(worker, hidden, ref), timeout=self.limits.timeout_s + GRACE_S
            )
        if reply is not None and ref is not None:
            worker.specs_sent.add(ref)
        if reply is None:  # crashed or hung: replace it; the run is the sandbox's fault
            worker.kill()
            reply = {"infra_error": f"sandbox worker died or hung (exit {worker.proc.returncode})"}
            worker = self._replace(worker)
        self._idle.put(worker)
        return _to_run(reply, test_ids, time.monotonic() - start)

    def _next_idle(self) -> Worker:
        while True:
            if self._broken:
                raise PappoError(self._broken)
            try:
                return self._idle.get(timeout=1.0)
            except queue.Empty:
                continue

    def run_many(self, jobs: Sequence[tuple[Any, ...]]) -> list[TestRun]:
        """Jobs are (files, test_ids) or (files, test_ids, hidden); results in order."""
        if len(jobs) <= 1 or self.size == 1:
            return [self.run(*job) for job in jobs]
        with ThreadPoolExecutor(self.size) as ex:
            return list(ex.map(lambda job: self.run(*job), jobs))

    def _replace(self, dead: Worker) -> Worker:
        try:
            fresh = Worker(self.limits)
        except (PappoError, OSError) as e:
            self._broken = f"a sandbox worker died and could not be restarted: {e}"
            raise PappoError(self._broken) from e
        with self._lock:
            self._all = [w for w in self._all if w is not dead] + [fresh]
        return fresh


_SPEC_REFS: dict[int, tuple[Any, Any, Any, str]] = {}


def _spec_ref(hidden: Mapping[str, Any]) -> str:
    """The digest a worker keeps a hidden-check spec under. Specs are large (tens of KB of JSON)
    and the same for every run of a task, so each worker gets each one once (`server.py`).
    Memoised on the identity of the spec's `checks` list, held here so its id cannot be reused;
    a spec's lists are never edited in place."""
    checks, roots, always = hidden["checks"], hidden.get("roots"), hidden.get("always", False)
    hit = _SPEC_REFS.get(id(checks))
    if hit is not None and hit[0] is checks and hit[1] == roots and hit[2] == always:
        return hit[3]
    text = json.dumps({"checks": checks, "roots": roots, "always": always}, sort_keys=True)
    ref = hashlib.sha256(text.encode()).hexdigest()
    if len(_SPEC_REFS) > 1024:
        _SPEC_REFS.clear()
    _SPEC_REFS[id(checks)] = (checks, roots, always, ref)
    return ref


def _hidden_fields(worker: Worker, hidden: Mapping[str, Any] | None, ref: str | None) -> dict[str, Any]:
    if hidden is None:
        return {}
    if ref in worker.specs_sent:
        return {"hidden_ref": ref}
    return {"hidden_ref": ref, "hidden": dict(hidden)}


def _to_run(reply: dict[str, Any], test_ids: Sequence[str] | None, elapsed: float) -> TestRun:
    if reply.get("infra_error"):
        return TestRun(
            {t: "missing" for t in test_ids or []}, infra_error=reply["infra_error"], duration_s=elapsed
        )
    reply |= parse_records(base64.b64decode(reply["records"]), bytes.fromhex(reply["key"]))
    infra = None
    if not reply["ready"] and not reply["timed_out"]:
        infra = f"sandbox child failed before running tests (wait status {reply['exit_status']})"
    fill: Outcome = "timeout" if reply["timed_out"] else "missing"
    outcomes: dict[str, Outcome] = dict(reply["outcomes"])
    if test_ids is not None:
        outcomes = {t: outcomes.get(t, fill) for t in test_ids}
    return TestRun(
        outcomes=dict(sorted(outcomes.items())),
        failures=reply["failures"],
        collect_errors=reply["collect_errors"],
        collect_messages=reply.get("collect_messages", {}),
        duration_s=reply["duration_s"],
        timed_out=reply["timed_out"],
        infra_error=infra,
        log_tail=reply["log_tail"],
        tamper=reply["tamper"],
        isolation=reply["isolation"],
        ended_early=reply["ready"] and not reply["done"],
        hidden=reply.get("hidden"),
        trace=reply.get("trace", []),
        types=reply.get("types", {}),
    )


def containment_problem(limits: SandboxParams) -> str | None:
    """The fail-closed error where `limits` ask for containment that this machine cannot give."""
    if limits.isolation == "rlimits":
        return None
    from pappo.sandbox.isolation import unavailable

    why = unavailable()
    return None if why is None else fail_closed_message(why)


def require_containment(limits: SandboxParams) -> None:
    """Stop before any work (a PappoError) where the sandbox cannot contain untrusted code."""
    problem = containment_problem(limits)
    if problem:
        raise PappoError(problem)


_DEFAULT: dict[SandboxParams, SandboxPool] = {}


def default_pool(limits: SandboxParams) -> SandboxPool:
    """A process-wide pool per limits, closed at exit (for callers that do not manage one)."""
    if limits not in _DEFAULT:
        _DEFAULT[limits] = SandboxPool(limits)
    return _DEFAULT[limits]


@atexit.register
def _close_defaults() -> None:
    for pool in _DEFAULT.values():
        pool.close()
    _DEFAULT.clear()
