"""Unified diffs over in-memory file trees: make one, apply one strictly (no fuzz, no offset)."""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import tempfile
from pathlib import Path

from pappo.io import PappoError, write_tree

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_EOL = "\\ No newline at end of file"


def split_lines(text: str, keepends: bool = False) -> list[str]:
    r"""`text` split at "\n" only, as diff(1), git and patch(1) count lines. `str.splitlines` also
    splits at \r, \x0b, \x0c (form feed), \x1c-\x1e, \x85, \u2028 and \u2029: a patch made or
    read that way numbers lines differently from every tool that applies it."""
    parts = text.split("\n")
    tail = parts.pop()  # what follows the last "\n": an unterminated last line, or "" (none)
    return [ln + "\n" if keepends else ln for ln in parts] + ([tail] if tail else [])


def make_patch(old: dict[str, bytes], new: dict[str, bytes], context: int = 3) -> str:
    """Unified diff (git-style a/ b/ headers) turning `old` into `new`; files must exist in both."""
    if set(old) != set(new):
        raise ValueError("make_patch only edits existing files; the trees list different paths")
    chunks: list[str] = []
    for path in sorted(old):
        if old[path] == new[path]:
            continue
        a = split_lines(old[path].decode(), keepends=True)
        b = split_lines(new[path].decode(), keepends=True)
        for line in difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", n=context):
            if line.endswith("\n"):
                chunks.append(line)
            else:  # last line without a newline: mark it the way diff(1) does
                chunks.append(line + "\n" + _NO_EOL + "\n")
    return "".join(chunks)


def apply_patch(files: dict[str, bytes], patch: str) -> dict[str, bytes]:
    """Apply `patch` to a copy of `files`; raise PappoError saying which hunk does not apply."""
    out = dict(files)
    for path, hunks in _parse(patch):
        if path not in out:
            raise PappoError(f"patch edits {path!r}, which is not in the tree")
        out[path] = _apply_file(path, out[path].decode(), hunks).encode()
    return out


def changed_lines(patch: str) -> list[str]:
    """Text of removed and added lines (without the +/- marker)."""
    return [
        line[1:] for line in split_lines(patch) if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))
    ]


def _parse(patch: str) -> list[tuple[str, list[tuple[int, list[str]]]]]:
    lines = split_lines(patch, keepends=True)
    files: list[tuple[str, list[tuple[int, list[str]]]]] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("--- "):
            raise PappoError(f"patch line {i + 1}: expected '--- a/<path>', got {lines[i]!r}")
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ b/"):
            raise PappoError(f"patch line {i + 2}: expected '+++ b/<path>'")
        path = lines[i + 1][6:].rstrip("\n")
        if lines[i][4:].rstrip("\n") != f"a/{path}":
            raise PappoError(f"patch line {i + 1}: old and new paths differ")
        i += 2
        hunks: list[tuple[int, list[str]]] = []
        while i < len(lines) and lines[i].startswith("@@"):
            m = _HUNK.match(lines[i])
            if not m:
                raise PappoError(f"patch line {i + 1}: malformed hunk header {lines[i]!r}")
            start, body = int(m.group(1)), []
            n_old = int(m.group(2) or 1)
            n_new = int(m.group(4) or 1)
            i += 1
            while i < len(lines) and lines[i][:1] in (" ", "+", "-", "\\"):
                if lines[i].startswith("--- ") and (n_old, n_new) == _counts(body):
                    break
                body.append(lines[i])
                i += 1
            if _counts(body) != (n_old, n_new):
                raise PappoError(f"patch for {path}: hunk at line {start} has wrong line counts")
            hunks.append((start, body))
        if not hunks:
            raise PappoError(f"patch for {path}: no hunks")
        files.append((path, hunks))
    return files


def _counts(body: list[str]) -> tuple[int, int]:
    old = sum(1 for ln in body if ln[:1] in (" ", "-"))
    new = sum(1 for ln in body if ln[:1] in (" ", "+"))
    return old, new


def _apply_file(path: str, text: str, hunks: list[tuple[int, list[str]]]) -> str:
    src = split_lines(text, keepends=True)
    out: list[str] = []
    pos = 0  # index into src of the next line not yet copied
    for start, body in hunks:
        at = max(start - 1, 0) if any(ln[:1] in (" ", "-") for ln in body) else start
        if at < pos:
            raise PappoError(f"patch for {path}: hunks overlap or are out of order near line {start}")
        out.extend(src[pos:at])
        pos = at
        for k, line in enumerate(body):
            if line.startswith("\\"):
                continue
            no_eol = k + 1 < len(body) and body[k + 1].startswith("\\")
            content = line[1:] if not no_eol else line[1:].rstrip("\n")
            if line[0] in (" ", "-"):
                if pos >= len(src) or src[pos] != content:
                    raise PappoError(
                        f"patch for {path} does not apply: line {pos + 1} is "
                        f"{(src[pos] if pos < len(src) else '<end of file>')!r}, "
                        f"the patch expects {content!r}"
                    )
                pos += 1
            if line[0] in (" ", "+"):
                out.append(content)
    out.extend(src[pos:])
    return "".join(out)


def apply_git_patch(files: dict[str, bytes], patch: str) -> dict[str, bytes]:
    """Apply a `git apply`-format diff (a/ b/ prefixes; may add, delete or rename files).

    Runs the real `git apply` on a temporary copy, so every form git accepts works the same here;
    git also refuses paths that leave the tree, and a diff that creates a symbolic link is refused.
    Raises PappoError with git's own message.
    """
    with tempfile.TemporaryDirectory(prefix="pappo-patch-") as tmp:
        root = Path(tmp) / "tree"
        root.mkdir()
        write_tree(root, files)
        (Path(tmp) / "change.diff").write_bytes(patch.encode())  # as is: no newline translation
        proc = subprocess.run(
            ["git", "apply", "--whitespace=nowarn", str(Path(tmp) / "change.diff")],
            cwd=root,
            capture_output=True,
            text=True,
            env=_GIT_ENV,
        )
        if proc.returncode != 0:
            raise PappoError(f"patch does not apply: {proc.stderr.strip() or proc.stdout.strip()}")
        links = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_symlink())
        if links:  # read through here, outside the sandbox, a link brings in any file of this machine
            raise PappoError(f"patch does not apply: it creates symbolic links ({', '.join(links[:5])})")
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }


# git must not pick up the caller's repository or configuration.
_GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    "GIT_CEILING_DIRECTORIES": "/",
}
