"""Deterministic FCFS multi-server queue simulation."""
from .customers import Customer, make_customers
from .engine import Served, simulate
from .stats import average_wait, max_queue_length, max_wait, queue_length_at, summary, utilisation

__all__ = [
    "Customer",
    "Served",
    "average_wait",
    "make_customers",
    "max_queue_length",
    "max_wait",
    "queue_length_at",
    "simulate",
    "summary",
    "utilisation",
]
