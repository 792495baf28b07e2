"""The README's two commands, CI running the README's test command, pinned environment, DVC config."""

from __future__ import annotations

import configparser
import re

from conftest import ROOT


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    first_section = text.split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", first_section, flags=re.S)


def test_readme_starts_with_two_commands():
    setup_run, setup_test = readme_commands()
    assert setup_run.endswith("dvc repro") and "requirements.lock" in setup_run
    assert "pytest" in setup_test and "requirements.lock" in setup_test
    assert "\n" not in setup_run and "\n" not in setup_test


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert readme_commands()[1] in ci.splitlines()


def test_lock_pins_everything_and_the_cpu_torch():
    # pip reads " #" to the end of a line as a comment: a pin may say why it is there
    text = (ROOT / "requirements.lock").read_text().splitlines()
    lines = [ln.split(" #")[0].rstrip() for ln in text if ln and not ln.startswith("#")]
    assert all(re.match(r"^[A-Za-z0-9_.\-\[\]]+==[^=\s]+$", ln) for ln in lines), "unpinned line"
    assert "torch==2.13.0" in lines
    names = {ln.split("==")[0].lower() for ln in lines}
    assert {
        "transformers",
        "peft",
        "pydantic",
        "jsonschema",
        "dvc",
        "dvclive",
        "typer",
        "rich",
        "pytest",
        "hypothesis",
    } <= names


def test_dvc_config_committed_without_analytics():
    config = configparser.ConfigParser()
    config.read(ROOT / ".dvc" / "config")
    assert config["core"]["analytics"] == "false"
