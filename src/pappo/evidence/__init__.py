"""Contracts, schema export, receipts, report, audit and release."""
