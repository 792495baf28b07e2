"""Runs of the experiment: one method on one seed, its report and files."""
