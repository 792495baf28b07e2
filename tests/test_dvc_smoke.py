"""Real `dvc repro` of the pipeline in a scratch git repository, on the small fixture task sets."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
import yaml
from filelock import FileLock

from conftest import FIXTURES, ROOT, fixture_params_raw

BIN = Path(sys.executable).parent


def files_sha256(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "checkpoint.json"
    }


def sh(*cmd: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}", "DVC_NO_ANALYTICS": "1"}
    if (cwd / "src" / "pappo").is_dir():  # the scratch repository's own code, whatever the caller's path says
        env["PYTHONPATH"] = str(cwd / "src")
    return subprocess.run(
        cmd, cwd=cwd, env=env, text=True, capture_output=True, timeout=1800
    )  # a hang guard, not a speed test


# What a scratch repository of the pipeline needs from this one (besides the fixture task sets).
PIPELINE_FILES = (
    "dvc.yaml",
    ".dvc/config",
    ".dvcignore",
    "src/pappo",
    "pyproject.toml",
    "requirements.lock",
    "schemas",
    "CITATION.cff",
    ".zenodo.json",
    ".gitignore",
)


def scratch_pipeline(repo: Path, params: dict, extra: tuple[str, ...] = ()) -> None:
    """The pipeline's code (PIPELINE_FILES and `extra`) and the fixture task sets under `repo`, with
    `params` (fixture params; task paths moved under data/) as params.yaml."""
    for rel in (*PIPELINE_FILES, *extra):
        src, dst = ROOT / rel, repo / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, dst)
    for name in ("repofix", "warmup"):
        shutil.copytree(FIXTURES / name, repo / "data" / name, ignore=shutil.ignore_patterns("*.lock.json"))
        params["tasks"][name] = {
            k: v.replace("tests/fixtures/", "data/") for k, v in params["tasks"][name].items()
        }
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def built_pipeline(tmp_path_factory: pytest.TempPathFactory, worker_id: str, dest: Path) -> str:
    """A copy at `dest` of the fixture pipeline after `git init`, a commit and its first `dvc repro`
    (seeds 0 and 1 published, 2 and 3 for tuning); returns that repro's output.

    Built once per test session and shared by this file and test_reviewer_path.py, across xdist
    workers: pytest-xdist's recipe for session data, a file lock in the temp folder they share."""
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent
    built, out = shared / "fixture-pipeline", shared / "fixture-pipeline.out"
    with FileLock(str(shared / "fixture-pipeline.lock")):
        if not out.exists():
            shutil.rmtree(built, ignore_errors=True)  # what another worker's failed build left
            out.write_text(_first_repro(built))
    shutil.copytree(built, dest, symlinks=True)
    return out.read_text()


def _first_repro(repo: Path) -> str:
    params = fixture_params_raw()
    # seed roles: 0 and 1 published (the matrix), 2 and 3 for tuning (the single-seed experiment)
    params |= {"seed": 2, "dev_seeds": [2, 3]}
    scratch_pipeline(repo, params, extra=("release/dvc.yaml",))
    for cmd in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
    ):
        assert sh(*cmd, cwd=repo).returncode == 0
    first = sh("dvc", "repro", cwd=repo)
    assert first.returncode == 0, first.stdout + first.stderr
    return first.stdout


def test_dvc_repro_validate_on_fixture_sets(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, worker_id: str
):
    repo = tmp_path / "repo"
    first = built_pipeline(tmp_path_factory, worker_id, repo)
    lock = json.loads((repo / "data/repofix/manifest.lock.json").read_text())
    assert lock["n_tasks"] == 4 and set(lock["splits"]) == {"0", "1", "2", "3"}
    assert (repo / "data/warmup/manifest.lock.json").exists()
    assert "manifest.lock.json" in (repo / "data/repofix/.gitignore").read_text()

    again = sh("dvc", "repro", cwd=repo)
    assert again.returncode == 0 and "didn't change" in again.stdout + again.stderr

    # base_model: a checkpoint with its record, the stage report, and the same bytes on a rerun.
    record = json.loads((repo / "models/base/checkpoint.json").read_text())
    report = json.loads((repo / "reports/base_model.json").read_text())
    assert record["profile"] == "tiny" and record["files"] == files_sha256(repo / "models/base")
    assert report["checkpoint"] == record and report["eval"]["n_tasks"] == 2
    assert {"greedy", "sampled"} <= set(report["eval"]) and "base policy on 2 eval tasks" in first
    assert report["timing"]["wall_s"] > 0  # what `pappo reproduce` plans by; check_reproduce reruns the stage

    check_runs(repo, seeds=(0, 1), first=first)
    check_audit(repo)

    # Changing a tracked input makes DVC rerun validation, which now fails and leaves no lock.
    manifest = repo / "data/repofix/manifest.jsonl"
    manifest.write_text(manifest.read_text() + "{not json}\n")
    broken = sh("dvc", "repro", cwd=repo)
    assert broken.returncode != 0 and "malformed JSON" in broken.stdout + broken.stderr
    assert not (repo / "data/repofix/manifest.lock.json").exists()


def check_runs(repo: Path, seeds: tuple[int, ...], first: str) -> None:
    """The train matrix and the single-seed experiment, through real DVC commands."""
    from pappo.experiment.report import RUN_METHODS

    reports = check_run_reports(repo, seeds)

    # The single-seed experiment trains its dev seed (2) itself: no published run shares its seed.
    exp = json.loads((repo / "reports/experiment/metrics.json").read_text())
    assert (
        set(exp) == set(RUN_METHODS)
        and json.loads((repo / "reports/experiment/ppo/report.json").read_text())["seed"] == 2
    )
    assert first.count("seed 0: update 1/1") == 4 and first.count("seed 2: update 1/1") == 4, first
    sh("git", "add", "-A", cwd=repo)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "runs", cwd=repo)
    # A try on a published seed is refused before anything runs, and says where to tune.
    refused = sh("dvc", "exp", "run", "-S", "seed=0", cwd=repo)
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "seed: 0 is a published (confirmatory) seed" in out, out
    assert "tune on dev_seeds [2, 3]" in out and "update 1/1" not in out, out
    print("dvc exp run -S seed=0:", next(line for line in out.splitlines() if "published" in line).strip())
    # DVC removes a stage's outputs before it runs the command, so the refused try took the dev
    # seed's experiment outputs away: restored from the cache (docs/tuning.md says so)
    assert sh("git", "checkout", "--", "params.yaml", cwd=repo).returncode == 0
    assert sh("dvc", "checkout", cwd=repo).returncode == 0
    assert sh("dvc", "status", "--json", "dvc.yaml", cwd=repo).stdout.strip() in ("{}", "")
    show = sh("dvc", "exp", "show", "--csv", cwd=repo)
    assert show.returncode == 0 and "pappo.success" in show.stdout, show.stdout + show.stderr
    # what a person compares: the experiment seed's headline means and the base model's success, no
    # per-run intervals or checkpoint hashes (those stay in the reports and receipts)
    header = show.stdout.splitlines()[0].split(",")
    assert not [c for c in header if c.startswith(("reports/runs/", "checkpoint.")) or c.endswith("_lo")], (
        header
    )
    assert {"pappo.success", "pappo.tool_cost", "sampled_success"} <= set(
        header
    ) and "pappo.success_hi" not in header
    print(
        f"dvc exp show --csv: {len(header)} columns, of which "
        f"{sum(c.startswith('src/') for c in header)} code dependencies"
    )
    check_exp_show_view(repo)
    for seed in seeds:  # the matrix outputs are intact
        assert (repo / "reports" / "runs" / f"seed_{seed}" / "pappo" / "report.json").is_file()
    check_one_seed_try(repo)
    check_two_processes(repo, reports[1, "ppo"])


def check_run_reports(repo: Path, seeds: tuple[int, ...]) -> dict[tuple[int, str], dict]:
    """Every run's report against the schema, its metrics and adapters, and the matched budget."""
    import jsonschema

    from pappo.experiment.report import RUN_METHODS, RunReport

    schema = json.loads((ROOT / "schemas" / "run_report.schema.json").read_text())
    reports = {}
    for seed in seeds:
        budgets = set()
        for method in RUN_METHODS:
            run = repo / "reports" / "runs" / f"seed_{seed}" / method
            data = json.loads((run / "report.json").read_text())
            jsonschema.validate(data, schema)
            report = RunReport.model_validate(data)
            assert (report.method, report.seed, report.device) == (method, seed, "cpu")
            assert report.final_eval.n_tasks == 2 and len(report.final_eval.tasks) == 2
            assert set(json.loads((run / "metrics.json").read_text())) >= {
                "success",
                "success_lo",
                "pass_at_k",
            }
            assert (run / "adapters" / "policy" / "adapter_model.safetensors").is_file()
            if method != "base":
                assert report.budget.episodes_used == report.budget.episodes_limit == 4  # 2 tasks x K = 2
                budgets.add(
                    (
                        report.budget.episodes_limit,
                        report.budget.generated_tokens_limit,
                        report.budget.task_draws_sha256,
                    )
                )
            reports[seed, method] = data
        assert len(budgets) == 1  # matched: the same episodes, tokens and train tasks for every method
    return reports


# `dvc exp show` as docs/experiment.md shows it: unchanged params and dependencies dropped, every
# declared metric kept (the five methods' headline means and the base model's success)
EXP_VIEW = ("--only-changed", "--keep", r"(base|rft|grpo|ppo|pappo)\.|(sampled_)?success$")
# Experiment + Created + 5 methods x 5 means + the base model's 2 + at most 3 changed params: 32
# cells of at most ~8 characters of value each (headers wrap in the terminal table), one screen.
EXP_VIEW_MAX_COLUMNS = 32


def md_columns(text: str) -> list[str]:
    return [c.strip() for c in text.splitlines()[0].strip().strip("|").split("|")]


def check_exp_show_view(repo: Path) -> None:
    default = md_columns(sh("dvc", "exp", "show", "--md", cwd=repo).stdout)
    view = md_columns(sh("dvc", "exp", "show", "--md", *EXP_VIEW, cwd=repo).stdout)
    metrics = {
        f"{m}.{k}"
        for m in ("base", "rft", "grpo", "ppo", "pappo")
        for k in ("success", "pass_at_k", "failed_edit_rate", "tool_cost", "repeated_test_rate")
    }
    assert metrics | {"success", "sampled_success"} <= set(view), (
        view
    )  # `seed` too once an experiment changed it
    assert len(view) <= EXP_VIEW_MAX_COLUMNS, view
    assert not {"exit_code", "head", "verdict", "integrity_ok"} & set(
        default
    )  # the audit verdict is an output
    print(f"dvc exp show --md: {len(default)} columns; with {' '.join(EXP_VIEW)}: {len(view)}")


def check_one_seed_try(repo: Path) -> None:
    """A one-seed hyperparameter try on a dev seed (`tune.rl`, merged over `rl` by the experiment
    alone), untargeted, trains that seed's runs only and leaves the published matrix valid; the same
    change made to the published configuration (`rl`) then stales both seeds' stages, the
    experiment and the stages after them, not validate or base_model."""
    tried = ("-S", "seed=3", "-S", "+tune.rl.ppo_epochs=2")  # the fixture's rl names no actor_lr
    took = _try_on_a_dev_seed(repo, tried)
    _publish_the_try(repo, tried, took)


def _try_on_a_dev_seed(repo: Path, tried: tuple[str, ...]) -> float:
    """The try as `dvc exp run`: only the experiment stage runs; returns its seconds."""
    sh("git", "add", "-A", cwd=repo)
    assert (
        sh(
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "seed 3",
            "--allow-empty",
            cwd=repo,
        ).returncode
        == 0
    )
    assert sh("dvc", "status", "--json", "dvc.yaml", cwd=repo).stdout.strip() in (
        "{}",
        "",
    )  # release/dvc.yaml: not run yet
    published = {p: p.read_bytes() for p in (repo / "reports" / "runs").rglob("report.json")}
    t0 = time.perf_counter()
    one = sh("dvc", "exp", "run", *tried, cwd=repo)
    t1 = time.perf_counter()
    out = one.stdout + one.stderr
    assert one.returncode == 0, out
    ran = sorted(line.split("'")[1] for line in one.stdout.splitlines() if line.startswith("Running stage"))
    assert ran == ["experiment"] and out.count("seed 3: update 1/1") == 4, out
    tried_report = json.loads((repo / "reports/experiment/ppo/report.json").read_text())
    assert tried_report["seed"] == 3 and tried_report["params"]["rl"]["ppo_epochs"] == 2  # the try ran
    assert {p: p.read_bytes() for p in published} == published  # the matrix untouched
    assert sh("dvc", "status", "--json", "dvc.yaml", cwd=repo).stdout.strip() in ("{}", "")
    return t1 - t0


def _publish_the_try(repo: Path, tried: tuple[str, ...], took: float) -> None:
    """The try made the published `rl`: both seeds' stages and the experiment go stale (not
    validate or base_model); then the checkout is put back. That a seed's stage retrains its
    methods is the first `dvc repro` (check_runs), that the base run reads no `rl`
    test_experiment.py's test_the_untrained_base_run_reads_no_rl_params."""
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["rl"]["ppo_epochs"], params["tune"]["rl"] = 2, {}  # the try, now made the published `rl`
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    stale = set(json.loads(sh("dvc", "status", "--json", "dvc.yaml", cwd=repo).stdout))
    seed_stages = {"train@0", "train@1"}
    assert seed_stages | {"experiment"} <= stale <= seed_stages | {"experiment", "report", "audit"}, (
        stale
    )  # not validate, base_model
    print(
        f"dvc exp run {' '.join(tried)}: stage experiment, 5 runs trained, {took:.0f} s; "
        f"then the same in rl: stale {sorted(stale)}"
    )
    # params and dvc.lock as committed; the try's experiment outputs back to the committed ones
    assert sh("git", "checkout", "--", ".", cwd=repo).returncode == 0
    back = sh("dvc", "checkout", "--force", cwd=repo)
    assert back.returncode == 0, back.stdout + back.stderr
    restored = sh("dvc", "status", "--json", "dvc.yaml", cwd=repo).stdout.strip()
    assert restored in ("{}", ""), restored


def check_two_processes(repo: Path, single: dict) -> None:
    """`pappo train` under `accelerate launch` with 2 CPU processes (gloo): the same run as the
    single-process stage, written once by rank 0, with both ranks in the receipt."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    out = repo / "ddp" / "ppo"
    run = sh(
        "accelerate",
        "launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        port,
        "-m",
        "pappo.cli",
        "train",
        "--seed",
        "1",
        "--method",
        "ppo",
        "--out",
        str(out),
        cwd=repo,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.stdout.count("ppo seed 1: held-out success") == 1  # rank 0 alone reports
    report, receipt = (json.loads((out / name).read_text()) for name in ("report.json", "receipt.json"))
    assert receipt["world_size"] == 2 and receipt["ranks_devices"] == ["cpu", "cpu"]
    assert report["budget"] == single["budget"]  # the same episodes, tokens and task draws
    assert report["final_eval"]["tasks"] == single["final_eval"]["tasks"]
    [one], [two] = single["updates"], report["updates"]
    assert one["rollout"] == two["rollout"]  # every rank's episodes, gathered in order
    assert len(one["steps"]) == len(two["steps"])
    for a, b in zip(one["steps"], two["steps"]):
        assert abs(a["actor/pg_loss"] - b["actor/pg_loss"]) <= 1e-3 * (1 + abs(a["actor/pg_loss"])), (a, b)


def audit_output(repo: Path) -> tuple[int, str]:
    out = sh("pappo", "audit", cwd=repo)
    return out.returncode, out.stdout + out.stderr


def flip(target: Path) -> None:
    """One bit of `target`'s middle byte flipped."""
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 1
    target.write_bytes(bytes(data))


def tampered_audit(repo: Path, keep: Iterable[Path], edit: Callable[[], None], *expect: str) -> str:
    """`edit`, then `pappo audit` must fail (exit 1) naming each of `expect`; the files in `keep`
    (every file `edit` changes) are put back as they were."""
    saved = {p: p.read_bytes() for p in keep}
    edit()
    code, text = audit_output(repo)
    for p, data in saved.items():
        p.write_bytes(data)
    missing = [e for e in expect if e not in text]
    assert code == 1 and not missing, (missing, text)
    return text


def check_audit(repo: Path) -> None:
    """The report and audit stages, then every tamper case through `pappo audit`."""
    summary = json.loads((repo / "reports/summary.json").read_text())
    assert summary["seeds"] == [0, 1] and (repo / "reports/summary.md").is_file()
    assert (repo / "reports/summary/success_curves.png").is_file()
    staged = json.loads((repo / "receipts/audit.json").read_text())
    assert (
        staged["integrity_ok"] and staged["exit_code"] == 2
    )  # an honest negative claim did not fail dvc repro
    assert (
        staged["scope"] == "workspace" and "scope: the workspace this dvc repro produced" in staged["verdict"]
    )
    receipt = json.loads((repo / "reports/runs/seed_0/ppo/receipt.json").read_text())
    assert receipt["hardware"]["accelerator"] == "cpu" and len(receipt["source"]["git_commit"]) == 40
    assert receipt["source"]["git_dirty"] is False and "report.json" in receipt["outputs"]["files"]
    # every stage computed under the pinned numerics, the same as the base model's (src/pappo/numerics.py)
    numerics = receipt["determinism"]["numerics"]
    assert numerics["pinned"] and numerics["requested"]["ATEN_CPU_CAPABILITY"] == "avx2"
    assert numerics == json.loads((repo / "reports/base_model.json").read_text())["numerics"]
    assert staged["numerics"]["comparison"] == "bitwise" and len(staged["numerics"]["groups"]) == 1
    sh("git", "add", "-A", cwd=repo)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "evidence", cwd=repo)
    check_release_leaves_status_clean(repo)
    stage_bytes = (repo / "receipts/audit.json").read_bytes()
    code, text = audit_output(repo)
    assert code == 2, text
    # two fixture seeds decide nothing: the seed-level verdict is inconclusive or does not hold, never holds
    assert re.search(r"claim pappo-beats-best-baseline: (INCONCLUSIVE|DOES NOT HOLD): ", text), text
    assert "needs GPU receipts" in text and "power:" in text and "history: " in text, text
    assert "scope: the evidence as committed at HEAD" in text
    # a plain run leaves the stage's DVC output alone (this verdict names the new HEAD: other bytes)
    assert "verdict not written" in text and (repo / "receipts/audit.json").read_bytes() == stage_bytes
    check_reproduce(repo)
    kept = repo.parent / "kept.json"
    assert sh("pappo", "audit", "--out", str(kept), cwd=repo).returncode == 2
    assert (
        json.loads(kept.read_text())["exit_code"] == 2
        and json.loads(kept.read_text())["head"] != staged["head"]
    )
    check_tampered_files(repo)
    check_published_numbers(repo)


def check_tampered_files(repo: Path) -> None:
    """A changed byte in each kind of evidence and input, and two seeds' reports swapped.

    The audit reports every failure it finds (it does not stop at the first), so tamperings whose
    failures name different file/field pairs share one audit (~3 s each), each asserted by a line
    naming its own file and field. The two params.yaml edits get an audit each: both change that
    file."""

    def append(rel: str, text: str) -> None:
        (repo / rel).write_text((repo / rel).read_text() + text)

    def replace(rel: str, old: str, new: str) -> None:
        (repo / rel).write_text((repo / rel).read_text().replace(old, new, 1))

    report, receipt = "reports/runs/seed_0/ppo/report.json", "reports/runs/seed_0/rft/receipt.json"
    adapter = "reports/runs/seed_1/ppo/adapters/policy/adapter_model.safetensors"
    manifest, source = "data/repofix/manifest.jsonl", "src/pappo/io.py"
    swapped = ("reports/runs/seed_0/grpo/report.json", "reports/runs/seed_1/grpo/report.json")

    def edit() -> None:
        flip(repo / report)
        replace(receipt, '"seed": 0', '"seed": 0 ')
        flip(repo / adapter)
        append(manifest, "\n")
        append(source, "\n# edit\n")
        a, b = (repo / p for p in swapped)  # two seeds' reports of one method
        da, db = a.read_bytes(), b.read_bytes()
        a.write_bytes(db)
        b.write_bytes(da)

    tampered_audit(
        repo,
        [repo / p for p in (report, receipt, adapter, manifest, source, *swapped)],
        edit,
        "reports/runs/seed_0/ppo/report.json [dvc.lock train@0 md5]",
        "reports/runs/seed_0/rft/receipt.json [dvc.lock train@0 md5]",
        "reports/runs/seed_1/ppo/adapters [dvc.lock train@1 md5]",
        "reports/runs/seed_1/ppo/receipt.json [outputs]: outputs.files['adapters/policy/adapter_model.safetensors']",
        "task manifest changed",
        "uncommitted changes to the pipeline code",
        "found M src/pappo/io.py",
        "reports/runs/seed_0/grpo/report.json [seed/method]: the file belongs to another run",
        "reports/runs/seed_1/grpo/report.json [seed/method]: the file belongs to another run",
    )
    params = [repo / "params.yaml"]
    tampered_audit(
        repo,
        params,
        lambda: replace("params.yaml", "min_delta: 0.05", "min_delta: 0.0"),
        "claims were edited after the run",
    )
    tampered_audit(
        repo, params, lambda: replace("params.yaml", "revision: ''", "revision: main"), "inputs.params_sha256"
    )
    assert audit_output(repo)[0] == 2  # restored: integrity holds again


def check_release_leaves_status_clean(repo: Path) -> None:
    """`dvc repro release/dvc.yaml` builds the bundle and commits its record; `dvc status` (every
    dvc.yaml) then has nothing to report, also without dist/ (git-ignored: a clone has none)."""
    release = sh("dvc", "repro", "release/dvc.yaml", cwd=repo)
    assert release.returncode == 0, release.stdout[-3000:] + release.stderr[-3000:]
    record = json.loads((repo / "release/bundle.json").read_text())
    assert record["sha256"] == hashlib.sha256((repo / record["path"]).read_bytes()).hexdigest()
    sh("git", "add", "-A", cwd=repo)
    assert (
        sh(
            "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "release", cwd=repo
        ).returncode
        == 0
    )
    shutil.rmtree(repo / "dist")
    status = sh("dvc", "status", cwd=repo)
    assert status.returncode == 0 and "Data and pipelines are up to date" in status.stdout, (
        status.stdout + status.stderr
    )
    again = sh("dvc", "repro", "release/dvc.yaml", cwd=repo)
    assert again.returncode == 0 and "didn't change" in again.stdout, again.stdout + again.stderr


def check_reproduce(repo: Path) -> None:
    """`pappo reproduce --sample 2 --base` on the committed evidence: same machine, same numerics,
    so a bitwise comparison, and every re-run is bit-identical; the workspace is left alone. The
    pipeline trained each seed's methods one after another in one process (`pappo train-seed`),
    reproduce trains a run alone (`pappo train`): identical bits mean no run leaves state behind
    that changes the next (the sample holds ppo or pappo, trained after three others)."""
    before = sh("git", "status", "--porcelain", "--ignored", cwd=repo).stdout
    out = repo.parent / "reproduction.json"
    run = sh("pappo", "reproduce", "--sample", "2", "--base", "--out", str(out), cwd=repo)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    rep = json.loads(out.read_text())
    assert rep["reproduced"] and len(rep["runs"]) == 3 and rep["runs"][0]["run"] == "base_model"
    # the sample holds a run with a critic: the stage reruns bit for bit, the base model's included
    assert {"ppo", "pappo"} & {r["run"].split("/")[-1] for r in rep["runs"]}, rep["runs"]
    assert all(r["comparison"] == "bitwise" and r["identical"] for r in rep["runs"]), rep
    assert "ETA" in run.stdout and "bit-identical" in run.stdout and "REPRODUCED" in run.stdout
    assert all(c["published_holds"] == c["reproduced_holds"] for c in rep["claims"]) and rep["claims"]
    print(f"pappo reproduce --sample 2 --base: {rep['wall_s']:.0f} s\n{rep['verdict']}")
    assert sh("git", "status", "--porcelain", "--ignored", cwd=repo).stdout == before
    bad = sh("pappo", "reproduce", "--runs", "7/ppo", cwd=repo)
    assert bad.returncode == 1 and "--runs '7/ppo'" in bad.stdout + bad.stderr


def rehash(repo: Path, run: str, name: str) -> None:
    """Make a tampered run file look honest: its receipt's hash and dvc.lock's md5 updated."""
    seed = run.split("/")[-2]
    receipt_path, lock_path = repo / run / "receipt.json", repo / "dvc.lock"
    receipt = json.loads(receipt_path.read_text())
    if name != "receipt.json":
        receipt["outputs"]["files"][name] = hashlib.sha256((repo / run / name).read_bytes()).hexdigest()
        receipt_path.write_text(json.dumps(receipt, indent=2, sort_keys=True) + "\n")
    lock = yaml.safe_load(lock_path.read_text())
    for out in lock["stages"][f"train@{seed.removeprefix('seed_')}"]["outs"]:
        if out["path"] in (f"{run}/{name}", f"{run}/receipt.json"):
            out["md5"] = hashlib.md5((repo / out["path"]).read_bytes()).hexdigest()
    lock_path.write_text(yaml.safe_dump(lock, sort_keys=False))


class Tampering:
    """Edits of a published repository, each audited and then undone (issue 20's tampering)."""

    RUN = "reports/runs/seed_0/pappo"

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        kept = ("dvc.lock", "reports/summary.json", "reports/summary.md", "reports/base_model.json")
        kept += ("reports/summary/success_curves.png",)
        kept += tuple(f"{self.RUN}/{name}" for name in ("report.json", "receipt.json", "metrics.json"))
        self.kept = [repo / p for p in kept]

    def case(self, edit: Callable[[], None], *expect: str) -> str:
        """`edit`, then the audit must fail (exit 1) naming each of `expect`; the files are restored."""
        return tampered_audit(self.repo, self.kept, edit, *expect)

    def edit_json(self, rel: str, change) -> None:
        data = json.loads((self.repo / rel).read_text())
        change(data)
        (self.repo / rel).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    def edit_receipt(self, change) -> None:
        """The run's receipt edited, its hash in dvc.lock made to match."""
        self.edit_json(f"{self.RUN}/receipt.json", change)
        rehash(self.repo, self.RUN, "receipt.json")


def check_published_numbers(repo: Path) -> None:
    """issue 20's tampering, each with the hashes made to match: the audit re-derives the numbers
    and names file, field, expected and found; uncommitted evidence fails as such."""
    t = Tampering(repo)
    check_report_numbers(t)
    check_run_numbers(t)
    check_run_bindings(t)
    # committed tampering is still a tampering: the summary's numbers are re-derived, not trusted
    t.edit_json("reports/summary.json", lambda d: d["comparisons"][0]["difference"].update(mean=0.333))
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "a better number", cwd=repo)
    code, text = audit_output(repo)
    assert sh("git", "reset", "-q", "--hard", "HEAD~1", cwd=repo).returncode == 0
    assert code == 1 and "reports/summary.json [comparisons[0].difference.mean]" in text, text
    assert "git status" not in text
    assert audit_output(repo)[0] == 2  # restored
    check_stale_only_where_code_changed(repo)


def check_report_numbers(t: Tampering) -> None:
    """The summary's numbers, its markdown, the base model's report and a plot, in one audit
    (different files; each must be named by its own line)."""
    repo = t.repo
    summary = json.loads((repo / "reports/summary.json").read_text())
    hi = summary["summaries"][4]["success"]["hi"]
    md = (repo / "reports/summary.md").read_text()
    rate = json.loads((repo / "reports/base_model.json").read_text())["eval"]["greedy"]["success_rate"]
    png = repo / "reports/summary/success_curves.png"

    def edit() -> None:
        t.edit_json("reports/summary.json", lambda d: d["summaries"][4]["success"].update(hi=0.99))
        (repo / "reports/summary.md").write_text(md.replace("| pappo |", "| pappo* |", 1))
        t.edit_json("reports/base_model.json", lambda d: d["eval"]["greedy"].update(success_rate=rate + 0.5))
        png.write_bytes(png.read_bytes() + b"\0")

    t.case(
        edit,
        "reports/summary.json [summaries[4].success.hi]: not what the run reports give",
        f"(expected {hi}, found 0.99)",
        "reports/summary.json [git status]: uncommitted evidence",
        "reports/summary.md [line ",
        "found | pappo* |",
        "reports/base_model.json [eval.greedy.success_rate]",
        f"expected {rate}, found {rate + 0.5}",
        "reports/summary/success_curves.png [sha256]",
    )


def check_run_numbers(t: Tampering) -> None:
    """A run's per-task outcomes and its receipt's hardware, rehashed and relocked (one audit)."""
    run = t.RUN

    def all_solved() -> None:
        def solve(d):
            for e in d["evals"]:
                for task in e["result"]["tasks"]:
                    task["success"] = 1.0  # the share of its boards solved
            d["final_eval"] = d["evals"][-1]["result"]

        t.edit_json(f"{run}/report.json", solve)
        rehash(t.repo, run, "report.json")
        t.edit_receipt(lambda d: d["hardware"].update(accelerator="cuda"))

    published = json.loads((t.repo / run / "report.json").read_text())["evals"][0]["result"]["success"][
        "mean"
    ]
    assert published < 1.0
    t.case(
        all_solved,
        f"{run}/report.json [evals[0].result.success.mean]",
        f"(expected 1.0, found {published})",
        f"{run}/receipt.json [hardware.accelerator]",
        "(expected cpu, found cuda)",
        "dvc.lock [git status]",
    )


def check_run_bindings(t: Tampering) -> None:
    """A run's adapters swapped under a rewritten receipt that also names a commit off HEAD's
    history (one audit, each named by its own line)."""
    run, repo = t.RUN, t.repo
    adapter = repo / run / "adapters/policy/adapter_model.safetensors"
    t.kept.append(adapter)
    # a commit with the very same code, off HEAD's history (here a child of HEAD no branch holds)
    made = sh(
        "git",
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit-tree",
        "HEAD^{tree}",
        "-p",
        "HEAD",
        "-m",
        "side",
        cwd=repo,
    )
    assert made.returncode == 0, made.stderr
    side = made.stdout.strip()

    def swap_adapter() -> None:  # other weights, the receipt's hash of them rewritten and relocked
        flip(adapter)
        digest = hashlib.sha256(adapter.read_bytes()).hexdigest()
        name = "policy/adapter_model.safetensors"
        t.edit_receipt(lambda d: d["checkpoint"]["adapters"].update({name: digest}))
        t.edit_receipt(lambda d: d["source"].update(git_commit=side))

    t.case(
        swap_adapter,
        f"{run}/adapters [dvc.lock train@0 md5]",
        f"{run}/receipt.json [checkpoint.adapters]",
        f"{run}/receipt.json [source.git_commit]",
        "not an ancestor of HEAD",
    )


def check_stale_only_where_code_changed(repo: Path) -> None:
    """An edit to the summary code reruns report and audit only and the evidence stays valid; an
    edit to the trainer stales the runs until they are retrained."""
    commit = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam"]
    summary_py = repo / "src/pappo/evidence/summary.py"
    summary_py.write_text(summary_py.read_text() + "\n# wording\n")
    assert sh(*commit, "summary wording", cwd=repo).returncode == 0
    assert set(json.loads(sh("dvc", "status", "--json", cwd=repo).stdout)) == {
        "report",
        "audit",
        "release/dvc.yaml:release",
    }
    rerun = sh("dvc", "repro", cwd=repo)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "Running stage 'report'" in rerun.stdout and "Running stage 'audit'" in rerun.stdout
    assert "Running stage 'train@" not in rerun.stdout and "Running stage 'base_model'" not in rerun.stdout
    assert sh(*commit, "evidence", cwd=repo).returncode == 0
    code, text = audit_output(repo)
    assert code == 2 and "integrity: OK" in text, text
    # a one-seed try edits `tune.rl` (`dvc exp run -S +tune.rl.actor_lr=...`): the experiment alone
    # is stale, the published matrix (`rl`) and its audit stay valid
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["tune"]["rl"] = {"ppo_epochs": params["rl"].get("ppo_epochs", 1) + 1}  # fixture's rl: no actor_lr
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    stale = set(json.loads(sh("dvc", "status", "--json", cwd=repo).stdout)) - {"release/dvc.yaml:release"}
    assert stale == {"experiment"}, stale
    assert audit_output(repo)[0] == 2
    assert sh("git", "checkout", "params.yaml", cwd=repo).returncode == 0
    trainer = repo / "src/pappo/rl/trainer.py"
    trainer.write_text(trainer.read_text() + "\n# a change\n")
    assert sh(*commit, "trainer", cwd=repo).returncode == 0
    stale = json.loads(sh("dvc", "status", "--json", cwd=repo).stdout)
    assert "train@0" in stale and "validate" not in stale
    code, text = audit_output(repo)
    assert code == 1 and "stale evidence: the train stage's code changed" in text, text
    assert sh("git", "reset", "-q", "--hard", "HEAD~3", cwd=repo).returncode == 0
