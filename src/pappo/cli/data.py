"""`pappo` commands of the task data: synthesize, hidden-checks, candidates, validate, tasks-doc, and
looking at a task: run-tests, play, headroom."""

from __future__ import annotations

from pathlib import Path

import typer

from pappo.cli.app import ParamsOpt, SetOpt, app, out_file, task_sets
from pappo.config import load_params
from pappo.io import PappoError


@app.command()
def synthesize(params_path: Path = ParamsOpt, task_set: str = SetOpt) -> None:
    """Synthesise bugs for every family and write the manifest(s), their hidden checks and candidate
    edits (committed data). Everything is built first and written only once every step of every set
    succeeded: a failure leaves the files as they were, never a new manifest beside stale side files."""
    from pappo.tasks import candidate_build, hidden
    from pappo.tasks.candidates import candidates_path
    from pappo.tasks.manifest import write_manifest
    from pappo.tasks.synthesize import synthesize_set

    params = load_params(params_path)
    built = []
    for name in task_sets(task_set):
        sp = getattr(params.tasks, name)
        tasks = synthesize_set(params, name, log=typer.echo)
        checks, problems = hidden.build_tasks(tasks, sp.repos, params.sandbox)
        hidden.refuse_problems("hidden checks", name, problems)
        edits, problems = candidate_build.build_tasks(tasks, checks, sp.repos, params.sandbox)
        hidden.refuse_problems("candidate edits", name, problems)
        built.append((sp.manifest, tasks, checks, edits))
    for manifest, tasks, checks, edits in built:
        write_manifest(manifest, tasks)
        typer.echo(f"wrote {manifest}: {len(tasks)} tasks")
        hidden.save_hidden(hidden.hidden_path(manifest), checks, log=typer.echo)
        candidate_build.save_candidates(candidates_path(manifest), edits, log=typer.echo)


@app.command("hidden-checks")
def hidden_checks(params_path: Path = ParamsOpt, task_set: str = SetOpt) -> None:
    """Build every task's hidden differential checks from the clean family trees (committed data)."""
    from pappo.tasks.hidden import build_hidden

    params = load_params(params_path)
    for name in task_sets(task_set):
        build_hidden(params, name, log=typer.echo)


@app.command()
def candidates(params_path: Path = ParamsOpt, task_set: str = SetOpt) -> None:
    """Build every task's candidate edits (the fix + validated-wrong edits; committed data)."""
    from pappo.sandbox.pool import require_containment
    from pappo.tasks.candidate_build import build_candidates

    params = load_params(params_path)
    sets = task_sets(task_set)
    require_containment(params.sandbox)
    for name in sets:
        build_candidates(params, name, log=typer.echo)


@app.command()
def validate(params_path: Path = ParamsOpt) -> None:
    """Validate every benchmark and warm-up task; write the lock files only if all pass."""
    from pappo.sandbox.pool import default_pool, require_containment
    from pappo.tasks.grade_table import grades_path, write_table
    from pappo.tasks.validate import write_lock
    from pappo.tasks.validate_sets import validate_sets

    params = load_params(params_path)
    require_containment(params.sandbox)
    locks = validate_sets(params)
    typer.echo(f"sandbox isolation: {default_pool(params.sandbox).isolation}")
    for name, done in locks.items():
        path = getattr(params.tasks, name).lock
        write_lock(done.lock, path)
        write_table(done.grades, grades_path(path))
        typer.echo(
            f"{name}: {done.lock.n_tasks} tasks in {len(done.lock.families)} families valid "
            f"({done.n_runs} sandboxed runs, slowest {done.slowest_run_s:.2f} s); wrote {path} and "
            f"{grades_path(path)} ({len(done.grades.rows)} reachable trees graded)"
        )


@app.command("tasks-doc")
def tasks_doc(
    params_path: Path = ParamsOpt,
    doc: Path = typer.Option(Path("docs/tasks.md"), help="Document holding the generated table."),
    check: bool = typer.Option(False, "--check", help="Only report drift; exit 1 if any."),
) -> None:
    """Regenerate the families/operators table of docs/tasks.md from the manifests."""
    from pappo.tasks.docs import update_doc

    changed = update_doc(doc, load_params(params_path), write=not check)
    if check and changed:
        raise PappoError(f"{doc} is out of date with the manifests; run `pappo tasks-doc`")
    typer.echo(f"{doc}: {'updated' if changed else 'up to date'}")


TaskOpt = typer.Option(..., "--task", help="instance_id, e.g. semverlib-001.")


@app.command("run-tests")
def run_tests_cmd(
    task_id: str = TaskOpt,
    patch: Path = typer.Option(None, "--patch", help="git-apply diff against the task's buggy tree."),
    params_path: Path = ParamsOpt,
) -> None:
    """Grade the task's buggy tree (or it with --patch applied) and print the grade as JSON."""
    import json

    from pappo.tasks.run_tests import grade_task

    result = grade_task(load_params(params_path), task_id, patch)
    typer.echo(json.dumps(result.to_json(), indent=2))


@app.command()
def play(
    task_id: str = TaskOpt,
    agent: str = typer.Option(
        "oracle", "--agent", help="oracle, noisy or submit (env.actions candidates: also random, systematic)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the noisy agent (and of the candidates' order)."),
    params_path: Path = ParamsOpt,
) -> None:
    """Play one episode with a scripted agent; print the transcript, events and metrics as JSON."""
    import json

    from pappo.env.play_one import play_task

    typer.echo(json.dumps(play_task(load_params(params_path), task_id, agent, seed), indent=2))


@app.command()
def headroom(
    params_path: Path = ParamsOpt,
    seed: int = typer.Option(0, "--seed", help="Split whose held-out tasks are played."),
    k: int = typer.Option(None, "--k", help="Candidates shown (default: env.candidates.k)."),
    max_turns: int = typer.Option(None, "--max-turns", help="Turn budget (default: env.max_turns)."),
    episodes: int = typer.Option(10, "--episodes", help="Episodes per task (episode seeds 0..N-1)."),
    out: Path = typer.Option(None, "--out", help="Write the JSON here (atomically) as well as printing it."),
) -> None:
    """Success of the random, systematic and oracle agents in candidates mode on a seed's eval tasks."""
    import json

    from pappo.env.headroom import env_with, without_per_task
    from pappo.env.headroom import headroom as measure
    from pappo.io import atomic_write_json
    from pappo.sandbox.pool import require_containment

    if out is not None:
        out_file(out)
    if episodes < 1:
        raise PappoError(
            f"--episodes {episodes}: play at least 1 episode per task; pass --episodes 1 or more"
        )
    params = load_params(params_path)
    env = env_with(params.env, k, max_turns)
    require_containment(params.sandbox)
    result = measure(params, env, seed, episodes, progress=lambda line: typer.echo(line, err=True))
    if out is not None:
        atomic_write_json(out, result)
    typer.echo(json.dumps(without_per_task(result), indent=2))
