"""Seed roles: published (confirmatory) and tuning seeds, disjoint; the experiment tunes on dev seeds only."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result
from pydantic import ValidationError
from typer.testing import CliRunner

from conftest import ROOT, write_params
from pappo.cli import app
from pappo.config import Params, load_params


def test_the_repository_s_seeds_and_dev_seeds_are_disjoint_and_its_experiment_seed_is_a_dev_seed():
    p = load_params(ROOT / "params.yaml")
    assert not set(p.seeds) & set(p.dev_seeds) and p.seed in p.dev_seeds
    # seeds 0-8 were tuned on (configurations chosen, or pilots run, with their results seen): they
    # are development seeds for good, never published (docs/changelog.md)
    assert set(range(9)) <= set(p.dev_seeds) and not set(range(9)) & set(p.seeds)


def test_an_overlap_of_seeds_and_dev_seeds_is_refused_with_the_fix(fx_params: Params):
    raw = fx_params.model_dump(mode="json", by_alias=True)
    with pytest.raises(
        ValidationError,
        match=r"share \[1\]: a seed is published \(confirmatory\) or for tuning, "
        r"never both; remove \[1\] from one of the two lists",
    ):
        Params.model_validate({**raw, "dev_seeds": [1, 7]})
    with pytest.raises(ValidationError, match="dev_seeds .* must be distinct"):
        Params.model_validate({**raw, "dev_seeds": [7, 7]})
    assert Params.model_validate({**raw, "dev_seeds": [7]}).dev_seeds == [7]


def run_experiment(params: Params, tmp_path: Path, seed: int) -> Result:
    path = write_params(
        params.model_copy(update={"seed": seed, "dev_seeds": [5, 6]}), tmp_path / "params.yaml"
    )
    return CliRunner().invoke(
        app,
        [
            "experiment",
            "--params",
            str(path),
            "--out",
            str(tmp_path / "exp"),
            "--base",
            str(tmp_path / "no-base"),
        ],
    )


def test_the_experiment_refuses_a_published_seed_and_says_to_tune_on_dev_seeds(
    fx_params: Params, tmp_path: Path
):
    refused = run_experiment(fx_params, tmp_path, 0)
    assert refused.exit_code == 1, refused.output
    assert "seed: 0 is a published (confirmatory) seed (seeds [0, 1])" in refused.output
    assert "tune on dev_seeds [5, 6]: `dvc exp run -S seed=5`" in refused.output
    assert not (tmp_path / "exp").exists()
    unknown = run_experiment(fx_params, tmp_path, 9)
    assert unknown.exit_code == 1 and "seed: 9 is not in dev_seeds [5, 6]" in unknown.output


def test_the_experiment_passes_the_seed_check_on_a_dev_seed(fx_params: Params, tmp_path: Path):
    # seed 5 is a tuning seed: the check lets it through, and the run stops at the next missing input
    allowed = run_experiment(fx_params, tmp_path, 5)
    assert "published (confirmatory)" not in allowed.output and "not in dev_seeds" not in allowed.output
    assert allowed.exit_code != 0 and "run `pappo validate`" in allowed.output, allowed.output
