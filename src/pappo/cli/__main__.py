"""`python -m pappo.cli`, e.g. under `accelerate launch -m pappo.cli train ...`."""

from pappo.cli import app

app()
