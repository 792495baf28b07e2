"""Temperature scales with offsets (Celsius, Fahrenheit, Kelvin)."""

from __future__ import annotations

from .dimension import UnknownUnitError

KELVIN_OFFSET = 273.15
FAHRENHEIT_OFFSET = 32.0
FAHRENHEIT_PER_KELVIN = 9.0 / 5.0
TOLERANCE = 1e-9


def normalize_scale(scale: str) -> str:
    """Accept 'c', '°C', 'K', ... and return one of 'C', 'F', 'K'."""
    name = scale.strip().lstrip("°").upper()
    if name not in ("C", "F", "K"):
        raise UnknownUnitError(f"unknown temperature scale {scale!r}")
    return name


def to_kelvin(value: float, scale: str) -> float:
    """Absolute temperature in kelvin."""
    scale = normalize_scale(scale)
    if scale == "C":
        return value + KELVIN_OFFSET
    if scale == "F":
        return (value - FAHRENHEIT_OFFSET) / FAHRENHEIT_PER_KELVIN + KELVIN_OFFSET
    return value


def from_kelvin(kelvin: float, scale: str) -> float:
    """Express an absolute kelvin temperature on ``scale``."""
    scale = normalize_scale(scale)
    if scale == "C":
        return kelvin - KELVIN_OFFSET
    if scale == "F":
        return (kelvin - KELVIN_OFFSET) * FAHRENHEIT_PER_KELVIN + FAHRENHEIT_OFFSET
    return kelvin


def convert_temperature(value: float, from_scale: str, to_scale: str) -> float:
    """Convert an absolute temperature; below absolute zero is an error."""
    kelvin = to_kelvin(value, from_scale)
    if kelvin < -TOLERANCE:
        raise ValueError(f"{value} {from_scale} is below absolute zero")
    return from_kelvin(max(kelvin, 0.0), to_scale)


def temperature_delta(delta: float, from_scale: str, to_scale: str) -> float:
    """Convert a temperature difference (no offsets, only the degree size)."""
    source, target = normalize_scale(from_scale), normalize_scale(to_scale)
    if source == "F":
        delta = delta / FAHRENHEIT_PER_KELVIN
    if target == "F":
        delta = delta * FAHRENHEIT_PER_KELVIN
    return delta
