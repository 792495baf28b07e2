"""`pappo` command line: one sub-command per stage, thin over the library."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer

from pappo.config import Params, load_params
from pappo.io import PappoError

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

ParamsOpt = typer.Option(Path("params.yaml"), "--params", help="Path of params.yaml.")


def _params(path: Path) -> Params:
    try:
        return load_params(path)
    except PappoError as e:
        _fail(str(e))
        raise  # unreachable


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


@app.command()
def synthesize(
    params_path: Path = ParamsOpt,
    task_set: str = typer.Option("all", "--set", help="repofix, warmup or all."),
) -> None:
    """Synthesise bugs for every family and write the manifest(s) (committed data)."""
    from pappo.tasks.families import list_families
    from pappo.tasks.manifest import write_manifest
    from pappo.tasks.synthesize import synthesize_family

    params = _params(params_path)
    sets = ["repofix", "warmup"] if task_set == "all" else [task_set]
    if any(s not in ("repofix", "warmup") for s in sets):
        _fail(f"--set {task_set!r}: choose repofix, warmup or all")
    for name in sets:
        sp = getattr(params.tasks, name)
        usage: Counter[str] = Counter()
        tasks = []
        try:
            for family in list_families(sp.repos):
                new = synthesize_family(sp.repos, family, params.synthesis, params.sandbox,
                                        params.tasks.tasks_per_family, usage)  # fmt: skip
                typer.echo(f"{name}/{family}: " + ", ".join(f"{t.operator}[{t.difficulty}]" for t in new))
                tasks += new
        except PappoError as e:
            _fail(str(e))
        write_manifest(sp.manifest, tasks)
        typer.echo(f"wrote {sp.manifest}: {len(tasks)} tasks, operators {dict(sorted(usage.items()))}")


@app.command()
def validate(params_path: Path = ParamsOpt) -> None:
    """Validate every benchmark and warm-up task; write the lock files only if all pass."""
    from pappo.tasks.validate import ValidationFailed, validate_set, write_lock

    params = _params(params_path)
    locks = {}
    problems: list[str] = []
    for name in ("repofix", "warmup"):
        Path(getattr(params.tasks, name).lock).unlink(missing_ok=True)  # never leave a stale lock
    for name in ("repofix", "warmup"):
        try:
            locks[name] = validate_set(name, params)  # type: ignore[arg-type]
        except ValidationFailed as e:
            problems += [f"[{name}] {m}" for m in e.errors]
        except PappoError as e:
            problems.append(f"[{name}] {e}")
    if len(locks) == 2:
        problems += _overlap(locks["repofix"].lock.families, locks["warmup"].lock.families)
    if problems:
        _fail("validation failed; no lock file written:\n" + "\n".join(f"  - {p}" for p in problems))
    for name, done in locks.items():
        write_lock(done.lock, getattr(params.tasks, name).lock)
        typer.echo(f"{name}: {done.lock.n_tasks} tasks in {len(done.lock.families)} families valid "
                   f"({done.n_runs} sandboxed runs, slowest {done.slowest_run_s:.2f} s); "
                   f"wrote {getattr(params.tasks, name).lock}")  # fmt: skip


def _overlap(bench: dict, warm: dict) -> list[str]:  # type: ignore[type-arg]
    same_name = sorted(set(bench) & set(warm))
    bench_hashes = {v.tree_sha256: k for k, v in bench.items()}
    same_tree = sorted(f"{k} = {bench_hashes[v.tree_sha256]}" for k, v in warm.items() if v.tree_sha256 in bench_hashes)
    out = [f"warm-up family {f} is also a benchmark family; rename or remove it" for f in same_name]
    return out + [f"warm-up family has the same tree as a benchmark family: {s}" for s in same_tree]


@app.command()
def schemas(
    folder: Path = typer.Option(Path("schemas"), help="Where the JSON Schemas live."),
    check: bool = typer.Option(False, "--check", help="Only report drift; exit 1 if any."),
) -> None:
    """Export the JSON Schemas of every contract (or check them for drift)."""
    from pappo.evidence.schemas import drift, export

    if check:
        stale = drift(folder)
        if stale:
            _fail(f"schemas out of date: {', '.join(stale)}; run `pappo schemas`")
        typer.echo("schemas up to date")
        return
    for path in export(folder):
        typer.echo(f"wrote {path}")


@app.command("tasks-doc")
def tasks_doc(
    params_path: Path = ParamsOpt,
    doc: Path = typer.Option(Path("docs/tasks.md"), help="Document holding the generated table."),
    check: bool = typer.Option(False, "--check", help="Only report drift; exit 1 if any."),
) -> None:
    """Regenerate the families/operators table of docs/tasks.md from the manifests."""
    from pappo.tasks.docs import update_doc

    params = _params(params_path)
    try:
        changed = update_doc(doc, params, write=not check)
    except PappoError as e:
        _fail(str(e))
    if check and changed:
        _fail(f"{doc} is out of date with the manifests; run `pappo tasks-doc`")
    typer.echo(f"{doc}: {'updated' if changed else 'up to date'}")


