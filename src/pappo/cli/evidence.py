"""`pappo` commands of the evidence: schemas, audit, report, reproduce, release, verify-bundle and
`evidence import`."""

from __future__ import annotations

from pathlib import Path

import typer

from pappo.cli.app import ParamsOpt, app, evidence_app
from pappo.config import load_params
from pappo.io import PappoError


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
            raise PappoError(f"schemas out of date: {', '.join(stale)}; run `pappo schemas`")
        typer.echo("schemas up to date")
        return
    for path in export(folder):
        typer.echo(f"wrote {path}")


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
    from pappo.evidence.bundle import audit_here
    from pappo.io import atomic_write_json

    verdict = audit_here(Path.cwd(), bundle, params_path, runs, base, stage)
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

    params = load_params(params_path)
    files = (out / "summary.json", out / "summary.md", out / "summary")
    write_summary(runs, *files, params.seeds, params.eval.n_boot, claims=params.claims)
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
    from pappo.evidence.reproduce import reproduce_here, write

    rep = reproduce_here(Path.cwd(), bundle, params_path, runs, sample, base, scratch, log=typer.echo)
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
    """Build the Zenodo evidence bundle of HEAD (refused unless the audit of HEAD has integrity and
    the tree is clean)."""
    from pappo.evidence import publish as publishing
    from pappo.evidence import zenodo

    root = Path.cwd()
    token = zenodo.token_from_env() if upload else ""  # fail before any work
    info = publishing.release(root, out, audit_path, params_path, runs, base, record, log=typer.echo)
    typer.echo(
        f"wrote {info.path} (sha256 {info.sha256}, {info.n_entries} entries)\n"
        f"{info.swhid_rev}\n{info.swhid_dir}"
    )
    for claim, verdict in info.claims.items():
        typer.echo(f"claim {claim}: {verdict.upper()}")
    if upload:
        typer.echo(publishing.deposit(root, info.path, sandbox, token, publish, timeout))


@app.command("verify-bundle")
def verify_bundle_cmd(
    zip_path: Path = typer.Argument(..., help="pappo-evidence-<version>.zip"),
    sha256: str = typer.Option(
        None,
        "--sha256",
        help="The zip's expected sha256 (Zenodo's checksum, or release/bundle.json in git): "
        "SHA256SUMS inside the zip is not authenticated, this is.",
    ),
) -> None:
    """Check a bundle offline: SHA256SUMS, SWHIDs, run receipts, dvc.lock md5s, the audit verdict."""
    from pappo.evidence.bundle_check import verify_bundle
    from pappo.io import sha256_file

    problems = verify_bundle(zip_path)
    if sha256 is not None and zip_path.is_file() and (found := sha256_file(zip_path)) != sha256.lower():
        problems.insert(0, f"{zip_path}: sha256 {found}, expected {sha256} (not the published zip)")
    elif sha256 is not None and not zip_path.is_file():
        problems.insert(0, f"{zip_path}: --sha256 checks a zip, not a folder")
    for p in problems:
        typer.echo(f"  - {p}", err=True)
    if problems:
        raise PappoError(f"{zip_path}: {len(problems)} problems")
    typer.echo(f"{zip_path}: OK")


@evidence_app.command("import")
def evidence_import(
    zip_path: Path = typer.Argument(..., help="pappo-evidence-<version>.zip (or its unpacked folder)."),
    force: bool = typer.Option(False, "--force", help="Replace outputs here that differ from the bundle's."),
) -> None:
    """Fill this clone's run folders, experiment, audit verdict, base checkpoint and DVC cache from a
    release bundle of its HEAD (checked first; nothing is written unless every check passes)."""
    from pappo.evidence.importer import import_bundle

    done = import_bundle(Path.cwd(), zip_path, force, log=typer.echo)
    typer.echo(
        f"imported the evidence of {done.commit}: {done.outs} DVC outputs ({done.files} files) "
        f"checked out, {done.tracked} git-tracked outputs the same as the bundle's; next: "
        "`dvc status`, `pappo audit`, `pappo reproduce --sample 2`"
    )
