"""The `pappo` app and what its commands share: a PappoError (an error meant for a person) is caught
once, here, for every command, so commands just call the library and let it rise."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from pappo.io import PappoError


class PappoErrors(TyperGroup):
    """A command group that reports a PappoError raised by any command under it as
    `error: <message>` on stderr with exit code 1 (no traceback: the message names the fix)."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PappoError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(code=1) from None


app = typer.Typer(
    cls=PappoErrors,
    add_completion=False,
    no_args_is_help=True,
    help="`pappo` command line: one sub-command per stage, thin over the library.",
)
evidence_app = typer.Typer(
    cls=PappoErrors, add_completion=False, no_args_is_help=True, help="Published evidence in a clone."
)
app.add_typer(evidence_app, name="evidence")

ParamsOpt = typer.Option(Path("params.yaml"), "--params", help="Path of params.yaml.")
SetOpt = typer.Option("all", "--set", help="repofix, warmup or all.")


def task_sets(task_set: str) -> list[str]:
    """The task sets `--set` names."""
    if task_set not in ("repofix", "warmup", "all"):
        raise PappoError(f"--set {task_set!r}: choose repofix, warmup or all")
    return ["repofix", "warmup"] if task_set == "all" else [task_set]


def out_folder(path: Path, flag: str = "--out") -> Path:
    """`path` if a run can make and write the folder there; checked before any work, so that a long
    run does not fail at its end. Creates nothing."""
    if path.exists() and not path.is_dir():
        raise PappoError(f"{flag} {path}: is a file, not a folder; pass a folder path (or remove the file)")
    _writable_above(path, flag)
    return path


def out_file(path: Path, flag: str = "--out") -> Path:
    """`path` if a file can be written there (see out_folder). Creates nothing."""
    if path.is_dir():
        raise PappoError(f"{flag} {path}: is a folder; pass a file path, e.g. {path / 'result.json'}")
    _writable_above(path.parent, flag)
    return path


def _writable_above(path: Path, flag: str) -> None:
    here = path.absolute()
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        raise PappoError(
            f"{flag} {path}: {here} is a file, so no folder can be made there; choose another path"
        )
    try:  # a real write, not os.access: root passes access checks on read-only mounts too
        with tempfile.TemporaryFile(dir=here):
            pass
    except OSError as e:
        raise PappoError(
            f"{flag} {path}: cannot write in {here} ({e.strerror}); choose a writable folder or fix its permissions"
        ) from None
