"""`pappo` command line: one sub-command per stage, thin over the library (parse the options, call
the library, print). app.py holds the app, which turns any PappoError into `error: <message>` and
exit code 1; importing the command modules registers their commands on it:

- data.py: the task data (synthesize, hidden-checks, candidates, validate, tasks-doc) and looking
  at a task (run-tests, play, headroom);
- train.py: base-model, profile, numerics, train, experiment;
- evidence.py: schemas, audit, report, reproduce, release, verify-bundle, evidence import.
"""

from pappo.cli import data, evidence, train
from pappo.cli.app import app

__all__ = ["app", "data", "evidence", "train"]
