"""The audit's source checks in an unpacked bundle (evidence/archived.py), on small folders: each
check passes on the untouched tree and names the file when one thing is changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pappo.evidence import archived
from pappo.experiment import receipt as rc
from pappo.io import sha256_file
from test_release import receipt

DVC_YAML = {
    "stages": {"train": {"cmd": "pappo train", "deps": ["src/pkg/a.py", "src/pkg/sub", "data/x.jsonl"]}}
}


class Fails(list[tuple[str, str, str]]):
    def __call__(self, file: Any, field: str, expected: Any, found: Any, message: str) -> None:
        self.append((str(file), field, message))


def source_tree(root: Path) -> Path:
    src = root / "source"
    for rel, text in {
        "src/pkg/a.py": "A = 1\n",
        "src/pkg/sub/b.py": "B = 2\n",
        "src/other.py": "not bound\n",
        "pyproject.toml": "[project]\n",
        "requirements.lock": "x==1\n",
        "dvc.yaml": yaml.safe_dump(DVC_YAML),
    }.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    return src


def test_receipts_must_bind_the_bundled_train_code(tmp_path: Path) -> None:
    src = source_tree(tmp_path)
    bound = ["pyproject.toml", "requirements.lock", "src/pkg/a.py", "src/pkg/sub"]
    listing = {
        p: sha256_file(src / p)
        for p in ("pyproject.toml", "requirements.lock", "src/pkg/a.py", "src/pkg/sub/b.py")
    }
    assert archived.files_under(src, bound) == listing  # src/other.py is not the train stage's
    (tmp_path / "run").mkdir()
    good = receipt(tmp_path / "run")
    good = good.model_copy(
        update={
            "source": good.source.model_copy(
                update={"tree_sha256": rc.listing_sha256(listing), "source_paths": bound}
            )
        }
    )
    fails = Fails()
    archived.check_source_tree(fails, tmp_path / "runs", {(0, "pappo"): good}, src)
    assert fails == []
    (src / "src/pkg/sub/b.py").write_text("B = 3\n")  # the code in the bundle is not the code that ran
    archived.check_source_tree(fails, tmp_path / "runs", {(0, "pappo"): good}, src)
    assert fails == [
        (
            str(tmp_path / "runs/seed_0/pappo/receipt.json"),
            "source.tree_sha256",
            "the code that ran is not the bundle's source/ (the released commit's train stage code)",
        )
    ]
    (src / "dvc.yaml").unlink()
    fails.clear()
    archived.check_source_tree(fails, tmp_path / "runs", {(0, "pappo"): good}, src)
    assert fails and fails[0][1] == "stages.train.deps"


def test_the_top_evidence_must_be_the_commit_s(tmp_path: Path) -> None:
    src = source_tree(tmp_path)
    for rel, text in {
        "dvc.lock": "schema: '2.0'\n",
        "reports/summary.json": "{}\n",
        "reports/summary/p.png": "png",
    }.items():
        for base in (tmp_path, src):
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_text(text)
    fails = Fails()
    archived.check_packaged(fails, tmp_path, src)
    assert fails == []
    (tmp_path / "reports/summary/p.png").write_text("other")
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    archived.check_packaged(fails, tmp_path, src)
    assert [f[0] for f in fails] == ["dvc.lock", "reports/summary"]
    assert all("not the released commit's" in f[2] for f in fails)


def test_the_verdict_says_what_it_could_not_check() -> None:
    text = archived.describe(archived.Archive(source=Path("s"), commit="ab" * 20))
    assert text.startswith("scope: the evidence bundle of commit " + "ab" * 20)
    assert "not checked here (no git repository):" in text and "source.git_commit" in text
    assert "that source/ is the tree of commit abababababab" in text
