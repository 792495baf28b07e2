"""Compare run reports field by field: python compare_reports.py OLD_RUNS NEW_RUNS SEED METHOD...

Every leaf field of report.json is compared. Differences are grouped by field pattern (list indices
replaced by [*]); timing fields (wall and CPU seconds, dates, peak memory) are counted apart."""
import json
import re
import sys
from collections import defaultdict
from pathlib import Path


def flat(x, pre=""):
    if isinstance(x, dict):
        return {k2: v2 for k, v in x.items() for k2, v2 in flat(v, f"{pre}.{k}" if pre else k).items()}
    if isinstance(x, list):
        return {k2: v2 for i, v in enumerate(x) for k2, v2 in flat(v, f"{pre}[{i}]").items()}
    return {pre: x}


def is_timing(k):
    return k.startswith("timing.") or re.search(r"(^|\.)wall_s(\.|$)", k) is not None


old, new, seed = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
for m in sys.argv[4:]:
    a = flat(json.loads((old / f"seed_{seed}" / m / "report.json").read_text()))
    b = flat(json.loads((new / f"seed_{seed}" / m / "report.json").read_text()))
    keys = sorted(set(a) | set(b))
    diff = [k for k in keys if a.get(k, "<absent>") != b.get(k, "<absent>")]
    timing = [k for k in diff if is_timing(k)]
    groups = defaultdict(set)
    for k in diff:
        if not is_timing(k):
            groups[re.sub(r"\[\d+\]", "[*]", k)].add((str(a.get(k, "<absent>"))[:24], str(b.get(k, "<absent>"))[:24]))
    same = len(keys) - len(diff)
    print(f"{m}: {len(keys)} leaf fields; {same} equal; {len(timing)} timing fields differ; other differences:")
    for g, vals in sorted(groups.items()):
        shown = "; ".join(f"{x} -> {y}" for x, y in sorted(vals)[:2])
        print(f"   {g}: {shown}")
    print(f"   adapters_sha256 equal: {all(a[k] == b.get(k) for k in a if k.startswith('adapters_sha256'))}")
