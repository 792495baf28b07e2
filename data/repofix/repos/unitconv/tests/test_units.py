import pytest

from unitconv import (DIMENSIONLESS, LENGTH, MASS, TIME, Dimension, Unit, UnitError,
                      UnknownUnitError, parse_token, parse_unit)


def test_dimension_arithmetic():
    """Dimensions multiply by adding exponents and divide by subtracting them."""
    velocity = LENGTH / TIME
    assert velocity == Dimension(1, 0, -1)
    assert velocity * TIME == LENGTH
    assert MASS * LENGTH / TIME ** 2 == Dimension(1, 1, -2)
    assert LENGTH ** 0 == DIMENSIONLESS
    assert Dimension(1, 2, 3) * Dimension(1, 1, 1) == Dimension(2, 3, 4)
    assert Dimension(3, 3, 3) / Dimension(1, 2, 3) == Dimension(2, 1, 0)
    assert Dimension(1, -1, 2) ** 3 == Dimension(3, -3, 6)


def test_dimensions_and_units_are_hashable_values():
    """Dimensions and units are immutable values usable as dict keys."""
    names = {LENGTH: "length", parse_unit("km/h"): "speed"}
    assert names[Dimension(1, 0, 0)] == "length"
    assert names[Unit((("km", 1), ("h", -1)))] == "speed"


def test_dimension_text_and_dimensionless():
    """Dimensions print as L/M/T powers, and '1' when dimensionless."""
    assert str(Dimension(1, 0, -2)) == "L T^-2"
    assert str(Dimension(2, 1, 1)) == "L^2 M T"
    assert str(DIMENSIONLESS) == "1"
    assert DIMENSIONLESS.is_dimensionless() is True
    assert [d.is_dimensionless() for d in (LENGTH, MASS, TIME)] == [False, False, False]


def test_parse_token():
    """Tokens are a table symbol with an optional non-zero integer exponent."""
    assert parse_token("km") == ("km", 1)
    assert parse_token(" s^-2 ") == ("s", -2)
    with pytest.raises(UnknownUnitError):
        parse_token("furlong")
    with pytest.raises(UnitError):
        parse_token("m^x")
    with pytest.raises(UnitError):
        parse_token("m^0")


def test_parse_simple_and_compound_units():
    """Numerators and denominators are parsed into signed exponents."""
    assert parse_unit("km/h") == Unit((("km", 1), ("h", -1)))
    assert parse_unit("kg*m/s^2").terms == (("kg", 1), ("m", 1), ("s", -2))
    assert parse_unit("m/s/kg").terms == (("m", 1), ("s", -1), ("kg", -1))


def test_parse_reciprocal_and_dimensionless():
    """'1/s' is a reciprocal; '', '1' and cancelling units are dimensionless."""
    assert parse_unit("1/s").terms == (("s", -1),)
    assert parse_unit("").terms == ()
    assert parse_unit(" 1 ").terms == ()
    assert parse_unit("km/km").terms == ()
    assert parse_unit("m*m").terms == (("m", 2),)


def test_parse_unit_errors():
    """Empty pieces around '/' and unknown symbols are rejected."""
    for bad in ("m/", "/s", "m//s"):
        with pytest.raises(UnitError, match="empty unit"):
            parse_unit(bad)
    with pytest.raises(UnknownUnitError):
        parse_unit("m/sec")
    with pytest.raises(UnknownUnitError):
        parse_unit("s/1")


def test_unit_factor_and_dimension():
    """A compound unit's factor and dimension come from the table."""
    kmh = parse_unit("km/h")
    assert kmh.factor == pytest.approx(1000 / 3600)
    assert kmh.dimension == Dimension(1, 0, -1)
    assert parse_unit("cm^2").factor == pytest.approx(1e-4)
    assert parse_unit("lb*ft").factor == pytest.approx(0.45359237 * 0.3048)
    assert parse_unit("").factor == 1.0


def test_unit_formatting():
    """Units print with '*' in each part and '/' before the denominator."""
    assert str(parse_unit("kg*m/s^2")) == "kg*m/s^2"
    assert str(parse_unit("1/h")) == "1/h"
    assert str(parse_unit("m/s*kg")) == "m/s*kg"
    assert str(parse_unit("ft^3")) == "ft^3"
    assert str(parse_unit("")) == ""


def test_unit_multiplication_and_division():
    """Multiplying units adds exponents; dividing cancels them."""
    m, s = parse_unit("m"), parse_unit("s")
    assert str(m * m / s) == "m^2/s"
    assert (m / s * s).terms == (("m", 1),)
    assert str(parse_unit("km") / parse_unit("m/s")) == "km*s/m"
    assert str(parse_unit("kg") * parse_unit("s^-2")) == "kg/s^2"
    assert str(parse_unit("kg") / parse_unit("s^3")) == "kg/s^3"
