"""The repository explains itself: no tracked text names a path outside it.

A reader who clones the project (or unzips the release) has only the tracked files. So no tracked
text may point at a folder beside the checkout (`../x` that leaves the repository, a `shared/`
folder), at the design notes or reference seeds the project was started from ("DESIGN.md",
"seed 00N", "seeds/00N"), which are not part of it. The design lives in docs/design.md and cites
public papers instead.

`../` is judged where it is prose (any text file; comments and docstrings of Python files),
resolved from the file's own folder, so a link between two docs is fine and a test's path-traversal
input (a string in code) is not a reference.
"""

from __future__ import annotations

import ast
import io
import re
import shutil
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SELF = "tests/test_self_contained.py"  # the checker names what it looks for; it is not scanned

NAMED = [
    (re.compile(r"(?<![\w-])shared[/]"), "a `shared/` folder (not in the repository)"),
    (re.compile(r"\bseeds?[ /_-]?0\d\d", re.IGNORECASE), "a reference seed (not in the repository)"),
    (re.compile(r"(?<!docs/)\bDESIGN\b"), "DESIGN.md (not in the repository; the design is docs/design.md)"),
]
UP = re.compile(r"(?<![\w.~/])((?:\.\.[/])+)[\w.<{-]")


def _python_prose(text: str) -> list[tuple[int, str]]:
    """(line, text) of the comments and docstrings of a Python source; [] if it does not parse."""
    try:
        tree = ast.parse(text)
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (SyntaxError, tokenize.TokenError):
        return []
    out = [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    out.append((first.lineno, first.value.value))
    return out


def _leaves_repo(rel: str, ups: str) -> bool:
    """Whether `ups` (e.g. '../../') taken from the folder of `rel` climbs above the root."""
    depth = len(Path(rel).parent.parts)
    return ups.count("..") > depth


def outside_references(root: Path, rel: str, text: str) -> list[str]:
    """Every reference in `text` (tracked file `rel` under `root`) to a path outside the repository,
    as 'rel:line: why: excerpt'."""
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for pattern, why in NAMED:
            m = pattern.search(line)
            if m:
                found.append(f"{rel}:{lineno}: {why}: {line.strip()[:100]}")
    prose = _python_prose(text) if rel.endswith(".py") else [(1, text)]
    for first_line, chunk in prose:
        for offset, line in enumerate(chunk.splitlines()):
            for m in UP.finditer(line):
                if _leaves_repo(rel, m.group(1)):
                    where = f"{rel}:{first_line + offset}"
                    found.append(f"{where}: a path above the repository: {line.strip()[:100]}")
    return found


def tracked_texts(root: Path) -> dict[str, str]:
    """Tracked text files (UTF-8, no NUL byte) by path; symlinks and binaries are skipped."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    out = {}
    for rel in filter(None, names.decode().split("\0")):
        path = root / rel
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            out[rel] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return out


def scan(root: Path) -> list[str]:
    texts = sorted((rel, text) for rel, text in tracked_texts(root).items() if rel != SELF)
    return [hit for rel, text in texts for hit in outside_references(root, rel, text)]


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs a git checkout (git ls-files)")
def test_no_tracked_text_names_a_path_outside_the_repository() -> None:
    hits = scan(ROOT)
    assert not hits, "tracked text points outside the repository; say it here or cite it:\n" + "\n".join(hits)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_checker_flags_a_planted_reference(tmp_path: Path) -> None:
    """A copy of README.md with a planted line is flagged; the clean copy is not."""
    repo = tmp_path / "repo"
    repo.mkdir()
    clean = (ROOT / "README.md").read_text(encoding="utf-8")
    (repo / "README.md").write_text(clean, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "README.md"], cwd=repo, check=True)
    assert scan(repo) == []
    planted = "The notes are in `" + "../" + "shared/x`.\n"
    (repo / "README.md").write_text(clean + planted, encoding="utf-8")
    hits = scan(repo)
    line = len(clean.splitlines()) + 1
    assert any(h.startswith(f"README.md:{line}: a `shared/`") for h in hits), hits
    assert any(h.startswith(f"README.md:{line}: a path above the repository") for h in hits), hits


@pytest.mark.parametrize(
    "rel, text, flagged",
    [
        ("README.md", "see ../" + "notes/x.md", True),  # the root's parent
        ("docs/a.md", "see [b](../README.md)", False),  # docs/ -> the root: inside
        ("docs/a.md", "see ../../" + "x", True),
        ("src/pappo/m.py", '"""Doc: ../../' + 'x"""\n', False),  # src/pappo/ -> the root: inside
        ("src/pappo/m.py", '"""Doc: ../../../' + 'x"""\n', True),
        ("tests/t.py", 'BAD = ["../../' + 'evil.py"]  # a traversal input\n', False),  # code, not prose
        ("tests/t.py", "# see ../../" + "x\n", True),
        ("src/m.py", "# as in the reference " + "seed 004\n", True),
        ("src/m.py", "# see DESIGN" + ".md section 4\n", True),
        ("README.md", "see docs/DESIGN" + ".md", False),
        ("README.md", "runs in reports/runs/seed_0/ppo", False),
    ],
)
def test_what_counts_as_outside(rel: str, text: str, flagged: bool) -> None:
    assert bool(outside_references(ROOT, rel, text)) is flagged
