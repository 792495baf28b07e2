import pytest

from unitconv import (Dimension, IncompatibleUnitsError, Quantity, UnitError, UnknownUnitError,
                      convert, parse_quantity)


def test_length_conversions():
    """Lengths convert through metres using the table factors."""
    assert convert(1, "mi", "km") == pytest.approx(1.609344)
    assert convert(1, "ft", "in") == pytest.approx(12.0)
    assert convert(250, "cm", "m") == pytest.approx(2.5)
    assert convert(3, "mm", "cm") == pytest.approx(0.3)


def test_mass_and_time_conversions():
    """Mass and time units convert to each other within their dimension."""
    assert convert(2, "lb", "g") == pytest.approx(907.18474)
    assert convert(1500, "g", "kg") == pytest.approx(1.5)
    assert convert(90, "min", "h") == pytest.approx(1.5)
    assert convert(2, "h", "s") == pytest.approx(7200.0)


def test_compound_conversion():
    """Speeds convert between compound units."""
    q = Quantity(36, "km/h").to("m/s")
    assert q.value == pytest.approx(10.0)
    assert str(q.unit) == "m/s"
    assert convert(60, "mi/h", "km/min") == pytest.approx(1.609344)


def test_incompatible_conversion_is_refused():
    """Converting between different dimensions raises IncompatibleUnitsError."""
    with pytest.raises(IncompatibleUnitsError):
        convert(1, "m", "s")
    with pytest.raises(IncompatibleUnitsError):
        Quantity(1, "km/h").to("km")
    with pytest.raises(IncompatibleUnitsError):
        Quantity(1, "kg") + Quantity(1, "m")


def test_add_and_subtract_use_left_unit():
    """Sums and differences are expressed in the left operand's unit."""
    total = Quantity(1, "km") + Quantity(250, "m")
    assert (total.value, str(total.unit)) == (1.25, "km")
    diff = Quantity(1, "h") - Quantity(30, "min")
    assert diff.value == pytest.approx(0.5)
    assert (Quantity(5, "m") - Quantity(500, "cm")).value == 0.0


def test_multiply_and_divide_quantities():
    """Products and quotients combine both values and units."""
    area = Quantity(3, "m") * Quantity(2, "m")
    assert (area.value, str(area.unit), area.dimension) == (6.0, "m^2", Dimension(2, 0, 0))
    speed = Quantity(10, "km") / Quantity(2, "h")
    assert (speed.value, str(speed.unit)) == (5.0, "km/h")
    assert speed.to("m/s").value == pytest.approx(25 / 18)


def test_scalar_multiply_and_divide():
    """Plain numbers scale the value and keep the unit."""
    assert (2 * Quantity(3, "kg")).value == 6.0
    assert (Quantity(3, "kg") * 2).value == 6.0
    half = Quantity(3, "s") / 2
    assert (half.value, str(half.unit)) == (1.5, "s")
    with pytest.raises(ZeroDivisionError):
        Quantity(1, "m") / Quantity(0, "s")


def test_equality_across_units():
    """Equal physical amounts compare equal regardless of the unit used."""
    assert Quantity(1, "km") == Quantity(1000, "m")
    assert Quantity(1, "in") == Quantity(2.54, "cm")
    assert Quantity(1, "km") != Quantity(1001, "m")
    assert Quantity(1, "m") != Quantity(1, "s")
    assert Quantity(1, "m") != 1.0


def test_ordering():
    """Ordering compares SI values; equal amounts are <= but not <."""
    assert Quantity(1, "in") < Quantity(3, "cm")
    assert not Quantity(3, "cm") < Quantity(1, "in")
    assert not Quantity(1, "m") < Quantity(100, "cm")
    assert Quantity(1, "m") <= Quantity(100, "cm")
    assert Quantity(2.54, "cm") <= Quantity(1, "in")
    assert not Quantity(3, "cm") <= Quantity(1, "in")
    with pytest.raises(IncompatibleUnitsError):
        Quantity(1, "m") < Quantity(1, "kg")


def test_parse_quantity_forms():
    """Numbers may be signed, decimal or exponent form, with or without a space."""
    q = parse_quantity("12.5 km/h")
    assert (q.value, str(q.unit)) == (12.5, "km/h")
    assert parse_quantity("-3m").value == -3.0
    assert parse_quantity("1e3 g") == Quantity(1, "kg")
    assert parse_quantity(" .5 h ") == Quantity(30, "min")
    assert str(parse_quantity("7")) == "7"


def test_parse_quantity_errors():
    """Missing numbers and unknown units are reported."""
    with pytest.raises(UnitError):
        parse_quantity("km/h")
    with pytest.raises(UnitError):
        parse_quantity("")
    with pytest.raises(UnknownUnitError):
        parse_quantity("5 furlong")


def test_text_forms():
    """str() shows value and unit; repr() round-trips the constructor."""
    assert str(Quantity(9.81, "m/s^2")) == "9.81 m/s^2"
    assert repr(Quantity(2, "kg*m")) == "Quantity(2.0, 'kg*m')"
    assert Quantity(4.0, "s").si_value == 4.0
