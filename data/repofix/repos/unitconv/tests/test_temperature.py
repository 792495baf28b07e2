import pytest

from unitconv import (UnknownUnitError, convert_temperature, from_kelvin, normalize_scale,
                      temperature_delta, to_kelvin)


@pytest.mark.parametrize(
    "value,src,dst,expected",
    [(100, "C", "F", 212.0), (0, "C", "K", 273.15), (32, "F", "C", 0.0),
     (-40, "F", "C", -40.0), (300, "K", "C", 26.85), (98.6, "F", "C", 37.0)],
    ids=["boil_c_f", "freeze_c_k", "freeze_f_c", "minus40", "k_to_c", "body"],
)
def test_convert_temperature_known_points(value, src, dst, expected):
    """Well-known reference temperatures convert exactly (to float precision)."""
    assert convert_temperature(value, src, dst) == pytest.approx(expected)


def test_same_scale_is_identity():
    """Converting to the same scale returns the value unchanged."""
    assert convert_temperature(21.5, "C", "C") == pytest.approx(21.5)
    assert convert_temperature(70, "F", "F") == pytest.approx(70.0)
    assert convert_temperature(5, "K", "K") == 5


def test_absolute_zero_is_allowed_below_is_not():
    """Exactly absolute zero converts to 0 K; anything colder raises ValueError."""
    assert convert_temperature(-273.15, "C", "K") == 0.0
    assert convert_temperature(-459.67, "F", "K") == 0.0
    assert convert_temperature(0, "K", "F") == pytest.approx(-459.67)
    with pytest.raises(ValueError):
        convert_temperature(-0.5, "K", "C")
    with pytest.raises(ValueError):
        convert_temperature(-274, "C", "F")


def test_kelvin_helpers():
    """to_kelvin and from_kelvin apply the scale offsets."""
    assert to_kelvin(0, "C") == pytest.approx(273.15)
    assert to_kelvin(212, "F") == pytest.approx(373.15)
    assert to_kelvin(10, "K") == 10
    assert from_kelvin(373.15, "F") == pytest.approx(212.0)
    assert from_kelvin(273.15, "C") == pytest.approx(0.0)


def test_scale_names_are_normalised():
    """Scales accept lower case and a degree sign; others are unknown units."""
    assert [normalize_scale(s) for s in ("c", " °F ", "K")] == ["C", "F", "K"]
    with pytest.raises(UnknownUnitError):
        normalize_scale("R")
    with pytest.raises(UnknownUnitError):
        convert_temperature(1, "C", "X")


def test_temperature_delta_ignores_offsets():
    """Temperature differences scale by 9/5 between F and C/K without offsets."""
    assert temperature_delta(10, "C", "F") == pytest.approx(18.0)
    assert temperature_delta(18, "F", "K") == pytest.approx(10.0)
    assert temperature_delta(7, "C", "K") == 7
    assert temperature_delta(9, "F", "F") == pytest.approx(9.0)
