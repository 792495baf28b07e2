"""A run's channels: framed messages, the result pipe, waiting for a child, checking its records.

Records arrive as `<json>\t<hmac-sha256 hex>` lines (see `pytest_plugin.emit`); anything that
fails the HMAC or the sequence is tampering. Kept import-light, like the worker.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import select
import signal
import time
from collections.abc import Callable
from typing import Any

MAX_CHANNEL = 8 * 1024 * 1024
_DONE = b'{"kind": "done", '  # how the plugin's last record starts (keys are sorted)


def wait_run(
    pid: int, chan: int, control: int, deadline: float, reap: Callable[[int], int]
) -> tuple[bytes, bool, int | None, bool]:
    """Read the channel until the run is over; returns data, timed out, wait status (if reaped), hangup.

    The run is over at its `done` record, when the child exits, or at the deadline. The child is
    then killed at once (PID 1 of its namespace: everything it left dies with it) and, unless it
    already exited, reaped after the reply is sent (`server.Worker._finish`), which saves the exit
    time. `reap(pid)` is its parent's wait (the worker's forker, `forker.Forker.reap`).
    """
    pidfd = os.pidfd_open(pid)
    data, exited, timed_out, hangup = bytearray(), False, False, False
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        ready = select.select([chan, pidfd, control], [], [], remaining)[0]
        if chan in ready:
            chunk = os.read(chan, 1 << 16)
            data += chunk
            if not chunk or len(data) > MAX_CHANNEL or _ends_with_done(data):
                break
        if pidfd in ready:
            exited = True
            break
        if control in ready:  # the pool closed its end: stop now
            hangup = True
            break
    os.close(pidfd)
    status = None
    if exited:
        status = reap(pid)
    else:
        os.kill(pid, signal.SIGKILL)
    os.set_blocking(chan, False)
    data += _drain(chan)
    return bytes(data), timed_out, status, hangup


def _ends_with_done(data: bytearray) -> bool:
    if not data.endswith(b"\n"):
        return False
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    return data.startswith(_DONE, start)


def _drain(fd: int) -> bytes:
    out = bytearray()
    while len(out) <= MAX_CHANNEL:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        out += chunk
    return bytes(out)


def parse_records(data: bytes, key: bytes) -> dict[str, Any]:
    """Verify each record's HMAC and sequence; anything else on the channel is tampering."""
    out: dict[str, Any] = {
        "outcomes": {},
        "failures": {},
        "collect_errors": [],
        "collect_messages": {},
        "tamper": [],
        "ready": False,
        "done": False,
        "hidden": None,
        "trace": [],
        "types": {},
    }
    expected = 0
    for line in data.split(b"\n"):
        if not line:
            continue
        body, _, mac = line.rpartition(b"\t")
        good = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
        record = json.loads(body) if body and hmac.compare_digest(mac, good) else None
        if record is None or record.get("seq") != expected:
            out["tamper"].append("forged or out-of-order record on the result channel")
            break
        expected += 1
        kind = record["kind"]
        if kind == "outcome":
            out["outcomes"][record["nodeid"]] = record["outcome"]
            out["types"][record["nodeid"]] = record.get("types") or {}
            if record.get("failure"):
                out["failures"][record["nodeid"]] = record["failure"]
        elif kind == "collect_error":
            out["collect_errors"].append(record["nodeid"])
            out["collect_messages"][record["nodeid"]] = str(record.get("message") or "")
        elif kind == "tamper":
            what = record.get("reason") or f"replaced {', '.join(record['changed'])}"
            out["tamper"].append(f"{record['where']}: {what}")
        elif kind == "hidden":
            out["hidden"] = record["results"]
        elif kind == "trace":
            out["trace"].append({"nodeid": record["nodeid"], "entries": record["entries"]})
        elif kind in ("ready", "done"):
            out[kind] = True
    if len(data) > MAX_CHANNEL:
        out["tamper"].append("result channel flooded")
    return out


def read_exact(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
