"""Privacy of a receipt: the host, user, home folder and absolute paths it must not name.

`sanitise` scrubs them from error text before a failure receipt records it; `leaks` is the audit's
check that a serialised receipt names none of them, nor the value of an environment variable.
"""

from __future__ import annotations

import fnmatch
import getpass
import os
import re
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pappo.numerics import PINNED_ENV

if TYPE_CHECKING:
    from pappo.experiment.receipt import Receipt

_ABS_PATH = re.compile(r"(?<![\w/.~<>-])/(?!/)[^\s'\"`,;:()\[\]{}<>|]+|\b[A-Za-z]:\\[^\s'\"`,;]+")
_BENIGN_ENV = (
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "SHLVL",
    "DEBIAN_FRONTEND",
    "DVC_EXP_BASELINE_REV",
    "DVC_EXP_NAME",  # `dvc exp run`: the commit (recorded on purpose) and its name
    *PINNED_ENV,
)  # the pinned numerics: recorded on purpose


def _private() -> list[tuple[str, str, str]]:
    """(kind, placeholder, value) of the names a receipt must not carry, longest values first."""
    found = [
        ("home directory", "<home>", str(Path.home()).rstrip("/")),
        ("hostname", "<host>", socket.gethostname()),
        ("username", "<user>", getpass.getuser()),
    ]
    return sorted([f for f in found if len(f[2]) > 1], key=lambda f: -len(f[2]))


def _word(value: str) -> re.Pattern[str]:
    """`value` as a whole token: not inside a longer name, path or placeholder."""
    return re.compile(rf"(?<![\w.<-]){re.escape(value)}(?![\w>-])")


def sanitise(text: str, repo_root: Path | str | None = None) -> str:
    """Replace the repo root, home directory, any other absolute path, the hostname and the username.

    Gives e.g. '<repo>/src/x.py', '<home>/.cache/...', '<path>', '<host>', '<user>'; for error
    messages of failure receipts. Host and user names are replaced as whole tokens only.
    """
    private = _private()
    roots = [(str(repo_root).rstrip("/"), "<repo>")] if repo_root else []
    for value, holder in roots + [(v, h) for _, h, v in private if h == "<home>"]:
        if len(value) > 1:
            text = re.sub(rf"{re.escape(value)}(?![\w.-])", holder, text)
    text = _ABS_PATH.sub("<path>", text)
    for _, holder, value in private:
        text = _word(value).sub(holder, text) if holder != "<home>" else text
    return text


def _strings(obj: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield f"{where}[{k!r}] (key)", str(k)
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _strings(v, f"{where}[{i}]")
    elif isinstance(obj, str):
        yield where, obj


def leaks(receipt: Receipt, repo_root: Path | str | None = None, allow: Sequence[str] = ()) -> list[str]:
    """Where the serialised receipt names the host, user, home, an absolute path or an env var value.

    Env values longer than 6 characters count (bar numbers, locale/terminal variables and `allow`);
    messages name the variable, never its value.
    """
    rules: list[tuple[str, re.Pattern[str]]] = [(kind, _word(v)) for kind, _, v in _private()]
    rules += [("repo root", re.compile(re.escape(str(repo_root))))] if repo_root else []
    rules += [("absolute path", _ABS_PATH)]
    rules += [
        (f"value of environment variable {k}", _word(v.strip()))
        for k, v in os.environ.items()
        if len(v.strip()) > 6
        and v not in allow
        and not re.fullmatch(r"[\d.]+", v.strip())
        and not any(fnmatch.fnmatchcase(k, g) for g in _BENIGN_ENV)
    ]
    found = []
    for where, text in _strings(receipt.model_dump(mode="json"), ""):
        found += [f"{where}: {kind} found" for kind, rule in rules if rule.search(text)]
    return found
