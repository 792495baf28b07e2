"""The deposit's and the citation's text state the published design's number of seeds, which
params.yaml `seeds` fixes (they once said three after the design moved to seven)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}


def test_zenodo_and_citation_say_the_number_of_published_seeds():
    n = len(yaml.safe_load((ROOT / "params.yaml").read_text())["seeds"])
    texts = [
        json.loads((ROOT / ".zenodo.json").read_text())["description"],
        (ROOT / "CITATION.cff").read_text(),
    ]
    for text in texts:
        said = {k for k, w in WORDS.items() if f"{w} seeds" in text}
        assert said == {n}, (said, n)
