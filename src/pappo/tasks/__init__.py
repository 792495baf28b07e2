"""Task model, repository families, bug synthesis, validation and splits (RepoFix-100)."""
