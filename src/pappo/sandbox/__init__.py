"""Isolated test execution. Version 1: one subprocess per run in a fresh temporary copy.

Kept import-free on purpose: the sandboxed child imports `pappo.sandbox.child` and
`pappo.sandbox.pytest_plugin` and must not pay for pydantic or yaml. Use `pappo.sandbox.runner`.
"""
