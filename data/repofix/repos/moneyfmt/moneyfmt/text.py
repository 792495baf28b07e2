"""Parsing and formatting money amounts as text."""

from __future__ import annotations

from .money import Money, minor_units


class MoneyFormatError(ValueError):
    """Raised for text that is not a valid amount."""


def _check_grouping(integer: str, sep: str) -> str:
    groups = integer.split(sep)
    if not 1 <= len(groups[0]) <= 3:
        raise MoneyFormatError(f"bad thousands grouping in {integer!r}")
    for group in groups[1:]:
        if len(group) != 3:
            raise MoneyFormatError(f"bad thousands grouping in {integer!r}")
    return "".join(groups)


def parse_money(text: str, currency: str = "USD", sep: str = ",", point: str = ".") -> Money:
    """Parse ``"1,234.56"``, ``"-12.5"`` or ``"(7.00)"`` into Money."""
    raw = text.strip()
    negative = False
    if raw.startswith("(") and raw.endswith(")"):
        negative, raw = True, raw[1:-1]
    elif raw.startswith("-"):
        negative, raw = True, raw[1:]
    integer, _, fraction = raw.partition(point)
    if sep in integer:
        integer = _check_grouping(integer, sep)
    digits = minor_units(currency)
    if not integer.isdigit() or (fraction and not fraction.isdigit()):
        raise MoneyFormatError(f"not a number: {text!r}")
    if point in raw and not fraction:
        raise MoneyFormatError(f"missing digits after the point: {text!r}")
    if len(fraction) > digits:
        raise MoneyFormatError(f"too many decimals for {currency}: {text!r}")
    cents = int(integer) * 10**digits + int(fraction.ljust(digits, "0") or 0)
    return Money(-cents if negative else cents, currency)


def group_thousands(digits: str, sep: str = ",") -> str:
    """Insert *sep* every three digits from the right."""
    head = len(digits) % 3 or 3
    parts = [digits[:head]]
    for start in range(head, len(digits), 3):
        parts.append(digits[start:start + 3])
    return sep.join(parts)


def format_money(
    money: Money,
    symbol: str = "",
    sep: str = ",",
    point: str = ".",
    negative: str = "minus",
) -> str:
    """Format as ``-$1,234.56`` (minus style) or ``($1,234.56)`` (parens style)."""
    if negative not in ("minus", "parens"):
        raise ValueError(f"unknown negative style: {negative!r}")
    digits = minor_units(money.currency)
    whole, frac = divmod(abs(money.amount_cents), 10**digits)
    body = symbol + group_thousands(str(whole), sep)
    if digits:
        body += point + str(frac).zfill(digits)
    if not money.is_negative():
        return body
    return f"({body})" if negative == "parens" else "-" + body
