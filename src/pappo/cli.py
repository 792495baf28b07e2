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
    """params.yaml, checked."""
    try:
        return load_params(path)
    except PappoError as e:
        _fail(str(e))
        raise  # unreachable


def _pinned(path: Path) -> Params:
    """Params, with the CPU numerics pinned before anything loads torch (commands that train or evaluate)."""
    from pappo.numerics import pin

    params = _params(path)
    for warning in pin(params.numerics):
        typer.echo(f"warning: numerics not pinned as asked: {warning}", err=True)
    return params


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


def _require_sandbox(params: Params) -> None:
    """Commands that run untrusted code stop before any work where the sandbox cannot contain it."""
    from pappo.sandbox.pool import containment_problem

    problem = containment_problem(params.sandbox)
    if problem:
        _fail(problem)


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
    for name in _sets(task_set):
        sp = getattr(params.tasks, name)
        usage: Counter[str] = Counter()
        tasks = []
        try:
            for family in list_families(sp.repos):
                new = synthesize_family(
                    sp.repos, family, params.synthesis, params.sandbox, params.tasks.tasks_per_family, usage
                )
                typer.echo(f"{name}/{family}: " + ", ".join(f"{t.operator}[{t.difficulty}]" for t in new))
                tasks += new
        except PappoError as e:
            _fail(str(e))
        write_manifest(sp.manifest, tasks)
        typer.echo(f"wrote {sp.manifest}: {len(tasks)} tasks, operators {dict(sorted(usage.items()))}")
        _build_hidden(params, name)
        _build_candidates(params, name)


@app.command("hidden-checks")
def hidden_checks(
    params_path: Path = ParamsOpt,
    task_set: str = typer.Option("all", "--set", help="repofix, warmup or all."),
) -> None:
    """Build every task's hidden differential checks from the clean family trees (committed data)."""
    params = _params(params_path)
    for name in _sets(task_set):
        _build_hidden(params, name)


def _sets(task_set: str) -> list[str]:
    if task_set not in ("repofix", "warmup", "all"):
        _fail(f"--set {task_set!r}: choose repofix, warmup or all")
    return ["repofix", "warmup"] if task_set == "all" else [task_set]


def _built(what: str, params: Params, name: str, build_set) -> list:
    """`build_set(manifest, repos, sandbox)` for one task set; stops on any problem, naming each."""
    sp = getattr(params.tasks, name)
    try:
        items, problems = build_set(sp.manifest, sp.repos, params.sandbox)
    except PappoError as e:
        _fail(str(e))
    if problems:
        _fail(f"{what} for {name}: nothing written:\n" + "\n".join(f"  - {p}" for p in problems))
    return items


def _spread(values: list[int]) -> str:
    v = sorted(values)
    return f"min {v[0]} / median {v[len(v) // 2]} / max {v[-1]}"


def _build_hidden(params: Params, name: str) -> None:
    from pappo.tasks.hidden import build_set, hidden_path, write_hidden

    manifest = getattr(params.tasks, name).manifest
    items = _built("hidden checks", params, name, build_set)
    write_hidden(hidden_path(manifest), items)
    typer.echo(
        f"wrote {hidden_path(manifest)}: {len(items)} tasks, checks per task {_spread([len(h.checks) for h in items])}"
    )
    for h in items:
        if h.uncovered:
            typer.echo(f"  {h.instance_id}: the bug is not covered by hidden checks: {h.uncovered}")


@app.command()
def candidates(
    params_path: Path = ParamsOpt,
    task_set: str = typer.Option("all", "--set", help="repofix, warmup or all."),
) -> None:
    """Build every task's candidate edits (the fix + validated-wrong edits; committed data)."""
    params = _params(params_path)
    sets = _sets(task_set)
    _require_sandbox(params)
    for name in sets:
        _build_candidates(params, name)


def _build_candidates(params: Params, name: str) -> None:
    from pappo.tasks.candidate_build import build_set
    from pappo.tasks.candidates import MAX_WRONG, candidates_path, write_candidates

    manifest = getattr(params.tasks, name).manifest
    items = _built("candidate edits", params, name, build_set)
    write_candidates(candidates_path(manifest), items)
    short = [c for c in items if c.shortfall]
    typer.echo(
        f"wrote {candidates_path(manifest)}: {len(items)} tasks, wrong edits per task "
        f"{_spread([len(c.edits) - 1 for c in items])}; {len(short)} with fewer than {MAX_WRONG}"
    )
    for c in short:
        typer.echo(f"  {c.instance_id}: {c.shortfall}")


@app.command()
def validate(params_path: Path = ParamsOpt) -> None:
    """Validate every benchmark and warm-up task; write the lock files only if all pass."""
    from pappo.tasks.validate import ValidationFailed, validate_set, write_lock

    params = _params(params_path)
    _require_sandbox(params)
    locks = {}
    problems: list[str] = []
    for name in ("repofix", "warmup"):
        Path(getattr(params.tasks, name).lock).unlink(missing_ok=True)  # never leave a stale lock
    for name in ("repofix", "warmup"):
        try:
            locks[name] = validate_set(name, params)
        except ValidationFailed as e:
            problems += [f"[{name}] {m}" for m in e.errors]
        except PappoError as e:
            problems.append(f"[{name}] {e}")
    if len(locks) == 2:
        problems += _overlap(locks["repofix"].lock.families, locks["warmup"].lock.families)
    if problems:
        _fail("validation failed; no lock file written:\n" + "\n".join(f"  - {p}" for p in problems))
    from pappo.sandbox.pool import default_pool

    typer.echo(f"sandbox isolation: {default_pool(params.sandbox).isolation}")
    for name, done in locks.items():
        write_lock(done.lock, getattr(params.tasks, name).lock)
        typer.echo(
            f"{name}: {done.lock.n_tasks} tasks in {len(done.lock.families)} families valid "
            f"({done.n_runs} sandboxed runs, slowest {done.slowest_run_s:.2f} s); "
            f"wrote {getattr(params.tasks, name).lock}"
        )


def _overlap(bench: dict, warm: dict) -> list[str]:
    same_name = sorted(set(bench) & set(warm))
    bench_hashes = {v.tree_sha256: k for k, v in bench.items()}
    same_tree = sorted(
        f"{k} = {bench_hashes[v.tree_sha256]}" for k, v in warm.items() if v.tree_sha256 in bench_hashes
    )
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


def _find_task(params: Params, instance_id: str):
    """(store, task) for an id from the benchmark or the warm-up set."""
    from pappo.tasks.store import TaskStore

    stores = [TaskStore.from_params(params, s) for s in ("repofix", "warmup")]
    for store in stores:
        if instance_id in store.tasks:
            return store, store.task(instance_id)
    return stores[0], stores[0].task(instance_id)  # raises, naming close matches


@app.command("run-tests")
def run_tests_cmd(
    task_id: str = typer.Option(..., "--task", help="instance_id, e.g. semverlib-001."),
    patch: Path = typer.Option(None, "--patch", help="git-apply diff against the task's buggy tree."),
    params_path: Path = ParamsOpt,
) -> None:
    """Grade the task's buggy tree (or it with --patch applied) and print the grade as JSON."""
    import json

    from pappo.sandbox.grading import grade
    from pappo.sandbox.pool import SandboxPool
    from pappo.tasks.patches import apply_git_patch

    params = _params(params_path)
    try:
        store, task = _find_task(params, task_id)
        candidate = store.buggy(task)
        if patch is not None:
            if not patch.is_file():
                _fail(f"--patch {patch}: no such file")
            candidate = apply_git_patch(candidate, patch.read_text())
        _require_sandbox(params)
        with SandboxPool(params.sandbox, workers=1) as pool:
            result = grade(pool, task, store.clean(task), candidate, store.hidden)
    except PappoError as e:
        _fail(str(e))
    typer.echo(json.dumps(result.to_json(), indent=2))


@app.command()
def play(
    task_id: str = typer.Option(..., "--task", help="instance_id, e.g. semverlib-001."),
    agent: str = typer.Option(
        "oracle", "--agent", help="oracle, noisy or submit (env.actions candidates: also random, systematic)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the noisy agent (and of the candidates' order)."),
    params_path: Path = ParamsOpt,
) -> None:
    """Play one episode with a scripted agent; print the transcript, events and metrics as JSON."""
    import functools
    import json

    from pappo.env.agents import NoisyAgent, OracleAgent, SubmitAgent
    from pappo.env.agents import play as play_episode
    from pappo.env.episode import RepairEnv
    from pappo.sandbox.grading import grade_many
    from pappo.sandbox.pool import SandboxPool

    params = _params(params_path)
    in_candidates = params.env.actions == "candidates"
    if agent not in ("oracle", "noisy", "submit") and not in_candidates:
        _fail(f"--agent {agent!r}: choose oracle, noisy or submit")
    try:
        store, task = _find_task(params, task_id)
        _require_sandbox(params)
        buggy, view = store.buggy(task), params.env.view_max_lines
        bot = (
            OracleAgent(task, buggy, view_max_lines=view)
            if agent == "oracle"
            else NoisyAgent(task, buggy, seed=seed, view_max_lines=view)
            if agent == "noisy"
            else SubmitAgent()
        )
        with SandboxPool(params.sandbox) as pool:
            env = RepairEnv(
                task,
                store.clean(task),
                buggy,
                params.env,
                functools.partial(grade_many, pool, hidden=store.hidden),
                candidates=store.candidates[task.instance_id] if in_candidates else None,
                seed=seed,
            )
            if in_candidates:
                from pappo.env.candidate_agents import make_candidate_agent

                env.reset()  # the agent is made from the episode's board
                bot = make_candidate_agent(agent, env, seed)
            metrics, transcript = play_episode(env, bot)
    except PappoError as e:
        _fail(str(e))
    out = {
        "instance_id": task.instance_id,
        "agent": agent,
        "seed": seed,
        "metrics": metrics.to_json(),
        "per_turn_rewards": env.per_turn_rewards,
        "terminal_reward": env.terminal_reward,
        "events": [vars(e) for e in env.events],
        "transcript": transcript,
        "final_grade": env.final_grade.to_json() if env.final_grade else None,
    }
    typer.echo(json.dumps(out, indent=2))


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

    from pappo.env.headroom import headroom as measure
    from pappo.io import atomic_write_json

    params = _params(params_path)
    _require_sandbox(params)
    env = params.env
    try:
        if k is not None:
            env = env.model_copy(update={"candidates": env.candidates.model_copy(update={"k": k})})
        if max_turns is not None:
            env = env.model_copy(update={"max_turns": max_turns})
        result = measure(
            params,
            type(env).model_validate(env.model_dump()),
            seed,
            episodes,
            progress=lambda line: typer.echo(line, err=True),
        )
    except PappoError as e:
        _fail(str(e))
    if out is not None:
        atomic_write_json(out, result)
    typer.echo(
        json.dumps(
            {
                **result,
                "agents": {
                    n: {k2: v for k2, v in a.items() if k2 != "per_task_success"}
                    for n, a in result["agents"].items()
                },
            },
            indent=2,
        )
    )


@app.command("base-model")
def base_model(
    params_path: Path = ParamsOpt,
    out: Path = typer.Option(Path("models/base"), help="Checkpoint folder (replaced)."),
    report: Path = typer.Option(Path("reports/base_model.json"), help="Stage report (replaced)."),
) -> None:
    """Resolve the pinned hub checkpoint, or build and warm-start the tiny one; report its success."""
    params = _pinned(params_path)
    from pappo.policy.base_model import run_stage

    try:
        run_stage(params, out, report, log=typer.echo)
    except PappoError as e:
        _fail(str(e))


@app.command()
def profile(
    overlay: Path = typer.Argument(..., help="Profile overlay, e.g. profiles/qwen2.5-coder-7b.yaml."),
    revision: str = typer.Option(None, help="model.revision: the 40-hex hub commit to pin."),
    params_path: Path = ParamsOpt,
    gpu_memory_gib: float = typer.Option(
        None,
        help="GPU size to check the predicted peak memory against (default: the CUDA device's, if "
        "model.device is cuda and one is here).",
    ),
) -> None:
    """Merge a params profile into params.yaml (validated; written atomically, comments dropped).
    A profile predicted not to fit in the GPU's memory (pappo.policy.memory) is refused."""
    import yaml

    from pappo.config import apply_profile
    from pappo.io import atomic_write_text
    from pappo.policy.memory import check

    try:
        merged = apply_profile(params_path, overlay, revision)
    except PappoError as e:
        _fail(str(e))
        return
    too_big = check(merged, gpu_memory_gib)
    if too_big:
        _fail(f"{overlay}: {too_big}; nothing written")
        return
    header = f"# params.yaml with {overlay} merged in by `pappo profile` (field docs: src/pappo/config.py)\n"
    dumped = merged.model_dump(mode="json", by_alias=True)
    atomic_write_text(params_path, header + yaml.safe_dump(dumped, sort_keys=False))
    typer.echo(
        f"wrote {params_path}: model {merged.model.id}@{merged.model.revision or '(unpinned)'} on {merged.model.device}"
    )


@app.command()
def numerics(
    params_path: Path = ParamsOpt,
    against: Path = typer.Option(None, help="A receipt.json or reports/base_model.json to compare with."),
    as_json: bool = typer.Option(False, "--json", help="Print this machine's numerics as JSON."),
) -> None:
    """This machine's CPU numerics under the pin, and whether a rerun here can match the evidence bit for bit."""
    import json

    from pappo.numerics import NumericsInfo, collect, comparison

    params = _pinned(params_path)
    here = collect(params.numerics)
    typer.echo(here.model_dump_json() if as_json else f"this machine: {here.describe()}")
    if against is None:
        return
    try:
        data = json.loads(against.read_text())
        theirs = NumericsInfo.model_validate(
            data["determinism"]["numerics"] if "determinism" in data else data["numerics"]
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        _fail(
            f"{against}: no numerics to compare with ({type(e).__name__}: {e}); pass --against a receipt.json "
            "or reports/base_model.json written by this version"
        )
        return
    kind, why = comparison(here, theirs)
    typer.echo(f"{against}: {theirs.describe()}")
    typer.echo(f"a rerun here is {'expected to be bitwise identical' if kind == 'bitwise' else kind}: {why}")


@app.command()
def train(
    method: str = typer.Option(..., help="base, rft, grpo, ppo or pappo."),
    seed: int = typer.Option(..., help="Seed: its split (from the manifest lock) and its sampling."),
    out: Path = typer.Option(
        ..., help="Run folder: report.json, metrics.json, adapters/, dvclive/, receipt.json."
    ),
    base: Path = typer.Option(
        Path("models/base"), help="Base checkpoint folder (the base_model stage's output)."
    ),
    params_path: Path = ParamsOpt,
) -> None:
    """Train one method on one seed from the base checkpoint and evaluate it on the held-out families."""
    params = _pinned(params_path)
    from pappo.experiment.report import RUN_METHODS
    from pappo.experiment.run import run_method

    if method not in RUN_METHODS:
        _fail(f"--method {method!r}: use one of {list(RUN_METHODS)}")
    _require_sandbox(params)
    try:
        report = run_method(params, seed, method, out, base, log=typer.echo)
    except PappoError as e:
        _fail(str(e))
        return
    if report is None:  # a rank other than 0 of a multi-process run: rank 0 reports
        return
    s = report.final_eval.success
    typer.echo(
        f"{method} seed {seed}: held-out success {s.mean:.2f} [{s.lo:.2f}, {s.hi:.2f}] on "
        f"{report.final_eval.n_tasks} tasks; {report.budget.episodes_used} training episodes; wrote {out}"
    )


@app.command()
def experiment(
    out: Path = typer.Option(
        Path("reports/experiment"), help="Folder of the single-seed experiment (replaced per method)."
    ),
    base: Path = typer.Option(Path("models/base"), help="Base checkpoint folder."),
    params_path: Path = ParamsOpt,
) -> None:
    """Every method on params `seed`, a dev seed, with `rl` and the try `tune.rl` merged over it
    (`dvc exp run -S seed=4 -S +tune.rl.actor_lr=0.002 experiment`)."""
    params = _pinned(params_path)
    from pappo.experiment.single_seed import run_experiment

    try:
        metrics = run_experiment(params, out, base, log=typer.echo)
    except PappoError as e:
        _fail(str(e))
        return
    for method, m in metrics.items():
        typer.echo(
            f"{method:6s} seed {params.seed}: held-out success {m['success']:.2f} "
            f"[{m['success_lo']:.2f}, {m['success_hi']:.2f}], pass@k {m['pass_at_k']:.2f}"
        )


@app.command()
def audit(
    bundle: Path = typer.Option(
        None,
        "--bundle",
        help="Audit an evidence bundle (the zip or its unpacked "
        "folder) instead of this checkout; run in an unpacked bundle, that bundle.",
    ),
    runs: Path = typer.Option(Path("reports/runs"), help="Seed matrix runs."),
    base: Path = typer.Option(Path("models/base"), help="Base checkpoint folder."),
    out: Path = typer.Option(
        None,
        help="Write the verdict (JSON) here; default: print it, write nothing "
        "(receipts/audit.json is the audit stage's DVC output).",
    ),
    stage: bool = typer.Option(
        False, help="DVC stage mode: exit 0 when only claims fail (integrity still exits 1)."
    ),
    params_path: Path = ParamsOpt,
) -> None:
    """Check every run's evidence, the claims and the tuning history: exit 0 all hold, 2 a claim does not
    hold, is inconclusive or exploratory, 1 integrity fails."""
    import tempfile

    from pappo.evidence import bundle as bundles
    from pappo.evidence.audit import audit as run_audit
    from pappo.io import atomic_write_json

    root = Path.cwd()
    target = bundle if bundle is not None else root if bundles.is_bundle(root) else None
    try:
        if target is not None:
            with tempfile.TemporaryDirectory(prefix="pappo-audit-") as tmp:
                verdict = bundles.audit_bundle(bundles.open_bundle(target, Path(tmp)))
        else:
            verdict = run_audit(_params(params_path), root, runs, base, root / "schemas", stage)
    except PappoError as e:
        _fail(str(e))
        return
    if out is not None:
        atomic_write_json(out, verdict.model_dump(mode="json"))
    typer.echo(verdict.verdict)
    where = (
        f"verdict written to {out}" if out is not None else "verdict not written; pass --out FILE to keep it"
    )
    typer.echo(f"{where}; exit code {verdict.exit_code}")
    code = verdict.exit_code
    raise typer.Exit(code=0 if stage and code == 2 else code)


@app.command()
def report(
    runs: Path = typer.Option(Path("reports/runs"), help="Seed matrix runs."),
    out: Path = typer.Option(
        Path("reports"), help="Writes summary.json, summary.md and summary/ (plots) here."
    ),
    params_path: Path = ParamsOpt,
) -> None:
    """Summarise every method over the seeds: intervals, seed-level comparisons, power, budgets, plots."""
    from pappo.evidence.summary_md import write_summary

    params = _params(params_path)
    try:
        files = (out / "summary.json", out / "summary.md", out / "summary")
        write_summary(runs, *files, params.seeds, params.eval.n_boot, claims=params.claims)
    except PappoError as e:
        _fail(str(e))
        return
    typer.echo(f"wrote {out / 'summary.json'}, {out / 'summary.md'} and plots in {out / 'summary'}")


@app.command()
def reproduce(
    bundle: Path = typer.Option(
        None,
        "--bundle",
        help="Re-run from an evidence bundle (zip or unpacked "
        "folder): its source/ and published runs, no repository needed.",
    ),
    runs: str = typer.Option(None, help="Runs to re-run, e.g. 0/ppo,1/grpo."),
    sample: int = typer.Option(None, help="Re-run a seeded sample of K runs of the matrix instead."),
    base: bool = typer.Option(
        False, "--base", help="Rebuild the base model too (the runs then train from it)."
    ),
    out: Path = typer.Option(Path("reproduction.json"), help="Where to write the Reproduction (JSON)."),
    scratch: Path = typer.Option(
        None, help="Folder for the scratch clone (default: a new temporary folder, removed)."
    ),
    params_path: Path = ParamsOpt,
) -> None:
    """Re-run runs of the published commit here and compare: exit 0 reproduced, 2 not, 1 error."""
    import tempfile

    from pappo.evidence import bundle as bundles
    from pappo.evidence.reproduce import choose_runs, write
    from pappo.evidence.reproduce import reproduce as run_reproduce

    try:
        with tempfile.TemporaryDirectory(prefix="pappo-reproduce-") as tmp:
            root, meta = Path.cwd(), None
            if bundle is not None:  # the bundle's params and runs; its source/ is the code re-run
                root = bundles.open_bundle(bundle, Path(tmp))
                meta = bundles.meta(root)
                params_path = root / "params.yaml"
            params = _params(params_path)
            chosen = choose_runs(params, runs, sample)
            rep = run_reproduce(root, params, chosen, base, scratch or Path(tmp), log=typer.echo, bundle=meta)
    except PappoError as e:
        _fail(str(e))
        return
    write(rep, out)
    typer.echo(rep.verdict)
    typer.echo(f"written to {out}")
    raise typer.Exit(code=0 if rep.reproduced else 2)


@app.command()
def release(
    out: Path = typer.Option(Path("dist"), "--out", help="Folder of the bundle (git-ignored)."),
    audit_path: Path = typer.Option(
        None, "--audit", help="A verdict of HEAD to use; default: audit HEAD now into OUT/audit.json."
    ),
    runs: Path = typer.Option(Path("reports/runs"), help="Seed matrix runs (for the audit)."),
    base: Path = typer.Option(Path("models/base"), help="Base checkpoint folder (for the audit)."),
    upload: bool = typer.Option(
        False, "--upload", help="Deposit the bundle on Zenodo (token from ZENODO_TOKEN)."
    ),
    sandbox: bool = typer.Option(
        False, "--sandbox", help="Use https://sandbox.zenodo.org instead of zenodo.org."
    ),
    publish: bool = typer.Option(
        False, "--publish", help="With --upload: publish (mints a DOI; cannot be undone)."
    ),
    timeout: float = typer.Option(120.0, help="Seconds to wait for each Zenodo answer."),
    record: Path = typer.Option(
        None,
        "--record",
        help="Also write what was built (zip, sha256, commit, SWHIDs) "
        "here: the release stage's committed output.",
    ),
    params_path: Path = ParamsOpt,
) -> None:
    """Build the Zenodo evidence bundle of HEAD (refused unless the audit of HEAD has integrity and the tree is clean)."""
    import dataclasses

    from pappo.evidence import zenodo
    from pappo.evidence.release import build_bundle
    from pappo.io import atomic_write_json

    root = Path.cwd()
    try:
        token = zenodo.token_from_env() if upload else ""  # fail before any work
        if audit_path is None:
            from pappo.evidence.audit import audit as run_audit

            verdict = run_audit(_params(params_path), root, runs, base, root / "schemas")
            audit_path = out / "audit.json"
            atomic_write_json(audit_path, verdict.model_dump(mode="json"))
            typer.echo(verdict.verdict)
        info = build_bundle(root, out, audit_path)
        typer.echo(
            f"wrote {info.path} (sha256 {info.sha256}, {info.n_entries} entries)\n"
            f"{info.swhid_rev}\n{info.swhid_dir}"
        )
        for claim, verdict in info.claims.items():
            typer.echo(f"claim {claim}: {verdict.upper()}")
        if record is not None:
            atomic_write_json(record, {**dataclasses.asdict(info), "path": info.path.as_posix()})
        if upload:
            meta = zenodo.load_metadata(root)
            answer = zenodo.upload(info.path, meta, zenodo.base_url(sandbox), token, publish, timeout)
            link = (answer.get("links") or {}).get("html", "")
            typer.echo(
                f"zenodo deposition {answer.get('id')}: {'published, doi ' + str(answer.get('doi')) if publish else 'draft ready for review'} {link}"
            )
    except PappoError as e:
        _fail(str(e))


evidence_app = typer.Typer(add_completion=False, no_args_is_help=True, help="Published evidence in a clone.")
app.add_typer(evidence_app, name="evidence")


@evidence_app.command("import")
def evidence_import(
    zip_path: Path = typer.Argument(..., help="pappo-evidence-<version>.zip (or its unpacked folder)."),
    force: bool = typer.Option(False, "--force", help="Replace outputs here that differ from the bundle's."),
) -> None:
    """Fill this clone's run folders, experiment, audit verdict, base checkpoint and DVC cache from a
    release bundle of its HEAD (checked first; nothing is written unless every check passes)."""
    from pappo.evidence.importer import import_bundle

    try:
        done = import_bundle(Path.cwd(), zip_path, force, log=typer.echo)
    except PappoError as e:
        _fail(str(e))
        return
    typer.echo(
        f"imported the evidence of {done.commit}: {done.outs} DVC outputs ({done.files} files) "
        f"checked out, {done.tracked} git-tracked outputs the same as the bundle's; next: "
        "`dvc status`, `pappo audit`, `pappo reproduce --sample 2`"
    )


@app.command("verify-bundle")
def verify_bundle_cmd(zip_path: Path = typer.Argument(..., help="pappo-evidence-<version>.zip")) -> None:
    """Check a bundle offline: SHA256SUMS, SWHIDs, run receipts, dvc.lock md5s, the audit verdict."""
    from pappo.evidence.release import verify_bundle

    problems = verify_bundle(zip_path)
    for p in problems:
        typer.echo(f"  - {p}", err=True)
    if problems:
        _fail(f"{zip_path}: {len(problems)} problems")
    typer.echo(f"{zip_path}: OK")


if __name__ == "__main__":  # `python -m pappo.cli`, e.g. under `accelerate launch -m pappo.cli train ...`
    app()
