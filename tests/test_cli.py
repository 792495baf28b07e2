"""The `pappo` app catches a PappoError once (src/pappo/cli/app.py): any command, in a sub-app too,
that lets one rise ends as one `error: <message>` line on stderr and exit code 1, no traceback;
any other exception is a bug and is not dressed up as a user error."""

from __future__ import annotations

import ast
from pathlib import Path

import typer
from typer.testing import CliRunner

from pappo.cli import app
from pappo.cli.app import PappoErrors
from pappo.io import PappoError

CLI = Path(__file__).resolve().parents[1] / "src" / "pappo" / "cli"


def _toy() -> typer.Typer:
    toy = typer.Typer(cls=PappoErrors)
    sub = typer.Typer()  # no group of its own: the top group's catch covers it

    @toy.command()
    def boom() -> None:
        typer.echo("started")
        raise PappoError("data/x.json: field y is negative; make it >= 0")

    @toy.command()
    def bug() -> None:
        raise ValueError("a bug, not bad input")

    @sub.command()
    def deep() -> None:
        raise PappoError("deep/file.yaml: bad")

    toy.add_typer(sub, name="sub")
    return toy


def test_a_pappo_error_is_one_error_line_and_exit_code_1():
    toy = _toy()
    r = CliRunner().invoke(toy, ["boom"])
    assert (r.exit_code, r.stdout, r.stderr) == (
        1,
        "started\n",
        "error: data/x.json: field y is negative; make it >= 0\n",
    )
    r = CliRunner().invoke(toy, ["sub", "deep"])
    assert (r.exit_code, r.stderr) == (1, "error: deep/file.yaml: bad\n")


def test_any_other_exception_is_not_turned_into_a_user_error():
    r = CliRunner().invoke(_toy(), ["bug"])
    assert isinstance(r.exception, ValueError) and "error:" not in r.stderr


def test_the_real_app_and_its_evidence_sub_app_report_pappo_errors(tmp_path: Path):
    r = CliRunner().invoke(app, ["synthesize", "--set", "bad"])
    assert (r.exit_code, r.stderr) == (1, "error: --set 'bad': choose repofix, warmup or all\n")
    missing = tmp_path / "nope.zip"
    r = CliRunner().invoke(app, ["evidence", "import", str(missing)])
    assert r.exit_code == 1 and r.stderr.startswith(f"error: {missing}: no such file or folder")
    r = CliRunner().invoke(app, ["numerics", "--params", str(tmp_path / "none.yaml")])
    assert r.exit_code == 1 and r.stderr.startswith(f"error: {tmp_path / 'none.yaml'}")


def test_no_command_catches_pappo_errors_itself():
    caught = [
        f"{path.name}:{node.lineno}"
        for path in sorted(CLI.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ExceptHandler)
        and "PappoError" in ast.unparse(node.type or ast.Constant(None))
    ]
    assert [c.split(":")[0] for c in caught] == ["app.py"], caught
