"""The file tools (view, search, str_replace) over an in-memory tree, and the run_tests summary.

Tool errors are returned as text for the agent, never raised: a bad path or range is an
ordinary observation, while a str_replace that does not apply is a `failed_edit` (ok=False).
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pappo.config.env import EnvParams
from pappo.sandbox.hackscan import is_test_path

if TYPE_CHECKING:
    from pappo.sandbox.grading import Grade

SNIPPET_CONTEXT = 2  # lines shown around an edited region


@dataclass(frozen=True)
class EditResult:
    ok: bool
    message: str


def truncate(text: str, max_chars: int) -> str:
    """`text` cut to `max_chars` characters, marker included, saying how much was cut."""
    if len(text) <= max_chars:
        return text
    marker = "\n[... output truncated: {} more characters ...]"
    keep = max(0, max_chars - len(marker.format(len(text))))
    return text[:keep] + marker.format(len(text) - keep)


def count_occurrences(text: str, sub: str) -> list[int]:
    """Start offsets of every occurrence of `sub`, overlapping ones included."""
    found, at = [], text.find(sub)
    while sub and at != -1:
        found.append(at)
        at = text.find(sub, at + 1)
    return found


def numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{n:>4}| {line}" for n, line in enumerate(lines, start=first))


class Workspace:
    """A mutable copy of a repository tree; paths are relative posix paths."""

    def __init__(self, tree: Mapping[str, bytes], params: EnvParams) -> None:
        self.files: dict[str, bytes] = dict(tree)
        self.params = params

    def tree(self) -> dict[str, bytes]:
        return dict(self.files)

    def text(self, path: str) -> str:
        return self.files[path].decode("utf-8", errors="replace")

    def view(self, path: str, start: int | None = None, end: int | None = None) -> str:
        """Numbered lines start..end (1-based, inclusive), or a listing for a directory."""
        path = _norm(path)
        if path not in self.files:
            listing = self._listing(path)
            return listing if listing is not None else self._no_such(path)
        lines = self.text(path).splitlines()
        n = len(lines)
        if n == 0:
            return f"{path} is empty."
        first = 1 if start is None else start
        last = n if end is None or end == -1 else min(end, n)
        if not 1 <= first <= n:
            return f"Error: start={first} is out of range: {path} has {n} lines (1-{n})."
        if last < first:
            return f"Error: end={end} is before start={first}; give 1 <= start <= end, or end=-1."
        cut = last - first + 1 > self.params.view_max_lines
        shown_last = first + self.params.view_max_lines - 1 if cut else last
        out = f"{path} (lines {first}-{shown_last} of {n})\n" + numbered(lines[first - 1 : shown_last], first)
        if cut:
            out += (
                f"\n[showing {self.params.view_max_lines} lines at most; "
                f"call view with start={shown_last + 1} to see more]"
            )
        return out

    def search(self, pattern: str) -> str:
        """`path:line: text` for every line holding `pattern` (plain substring), capped."""
        if not pattern:
            return "Error: the search pattern is empty."
        hits = []
        for path in sorted(self.files):
            for n, line in enumerate(self.text(path).splitlines(), start=1):
                if pattern in line:
                    hits.append(f"{path}:{n}: {line.strip()}")
        if not hits:
            return f"No matches for {pattern!r}."
        cap = self.params.search_max_hits
        out = "\n".join(hits[:cap])
        if len(hits) > cap:
            out += f"\n[{len(hits) - cap} more matches omitted; use a more specific pattern]"
        return out

    def str_replace(self, path: str, old_str: str, new_str: str) -> EditResult:
        """Replace the single occurrence of `old_str`; on any problem the tree is unchanged."""
        path = _norm(path)
        if path not in self.files:
            return EditResult(False, self._no_such(path))
        if is_test_path(path):
            return EditResult(
                False,
                f"Error: {path} is a test file; tests are read-only (grading "
                "always uses the original tests). Fix the library code.",
            )
        if not old_str:
            return EditResult(False, "Error: old_str is empty; copy the exact text to replace.")
        if old_str == new_str:
            return EditResult(False, "Error: old_str and new_str are the same; nothing would change.")
        text = self.text(path)
        hits = count_occurrences(text, old_str)
        if not hits:
            return EditResult(
                False,
                f"Error: old_str was not found in {path}; it must match the file "
                "exactly, indentation and blank lines included.",
            )
        if len(hits) > 1:
            at = ", ".join(str(text.count("\n", 0, h) + 1) for h in hits[:10])
            return EditResult(
                False,
                f"Error: old_str occurs {len(hits)} times in {path} (lines {at}); "
                "include more surrounding lines to make it unique.",
            )
        new_text = text[: hits[0]] + new_str + text[hits[0] + len(old_str) :]
        problem = _syntax_problem(path, new_text)
        if problem:
            return EditResult(False, f"Error: the edit would break {path}: {problem}. File unchanged.")
        self.files[path] = new_text.encode()
        return EditResult(True, _edit_snippet(path, new_text, hits[0], len(new_str)))

    def _listing(self, path: str) -> str | None:
        prefix = "" if path in ("", ".") else path.rstrip("/") + "/"
        under = sorted(p for p in self.files if p.startswith(prefix))
        if not under:
            return None
        return f"Files under {prefix or '.'} ({len(under)}):\n" + "\n".join(under)

    def _no_such(self, path: str) -> str:
        close = difflib.get_close_matches(path, sorted(self.files), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else " Use view('.') to list the files."
        return f"Error: no file or directory {path!r}.{hint}"


def _norm(path: str) -> str:
    """Accept './a.py' and '/a.py' for 'a.py': agents write paths all three ways."""
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/") if path not in ("/", "") else "."


def _syntax_problem(path: str, text: str) -> str | None:
    if not path.endswith(".py"):
        return None
    try:
        ast.parse(text, filename=path)
    except SyntaxError as e:
        return f"SyntaxError at line {e.lineno}: {e.msg}"
    except ValueError as e:  # e.g. a null byte
        return f"invalid source: {e}"
    except (RecursionError, MemoryError):  # nesting deeper than the parser holds
        return "invalid source: nested too deeply to parse"
    return None


def _edit_snippet(path: str, text: str, offset: int, length: int) -> str:
    """The edited region with a little context, numbered as the file now is."""
    lines = text.splitlines()
    first = text.count("\n", 0, offset)  # 0-based line of the edit's start
    last = first + text.count("\n", offset, offset + length)
    lo, hi = max(0, first - SNIPPET_CONTEXT), min(len(lines), last + SNIPPET_CONTEXT + 1)
    return f"Edited {path}. Lines {lo + 1}-{hi} now read:\n" + numbered(lines[lo:hi], lo + 1)


def summarize_tests(grade: Grade) -> str:
    """What run_tests shows: counts, then the first failing test in a few lines. The sandbox
    masks memory addresses in the failure texts it captures (pytest_plugin), so this text is the
    same in every run of a seed (docs/experiment.md, "Reproducibility")."""
    if grade.infra_error:
        return f"Sandbox error, try again (the test run did not complete: {_clip(grade.infra_error)})."
    if grade.hack_attempt:  # refused by the static scan (nothing ran), or flagged while running
        ran = any(o != "not_run" for o in grade.outcomes.values())
        head = (
            "The grader flagged the run as gaming the tests:"
            if ran
            else "The grader rejected the code without running it:"
        )
        return head + "\n" + "\n".join(f"  {_clip(r)}" for r in grade.hack_reasons[:3])
    n = len(grade.outcomes)
    passed = sum(1 for o in grade.outcomes.values() if o == "passed")
    head = f"{passed} passed, {n - passed} failed (of {n} graded tests)."
    if passed == n:
        return head + " All tests pass; call submit() to finish."
    f = grade.first_failure or {}
    lines = [head, f"First failure: {f.get('test', '?')} ({f.get('outcome', 'failed')})"]
    if f.get("exc_type"):
        message = [_clip(m) for m in str(f.get("message") or "").splitlines()[:3]] or [""]
        lines.append(f"  {f['exc_type']}: {message[0]}")
        lines.extend(f"    {m}" for m in message[1:])
    compare = f.get("compare")
    if compare:
        shown = f"{compare.get('left')} {compare.get('op')} {compare.get('right')}"
        if f"assert {shown}" not in lines[-1]:  # pytest's message often says it already
            lines.append(f"  compared: {shown}")
    if f.get("test_file") and f.get("test_line"):
        lines.append(f"  at {f['test_file']}:{f['test_line']}")
    return "\n".join(lines)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
