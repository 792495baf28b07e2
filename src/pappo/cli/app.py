"""The `pappo` app and what its commands share: a PappoError (an error meant for a person) is caught
once, here, for every command, so commands just call the library and let it rise."""

from __future__ import annotations

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
