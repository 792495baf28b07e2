"""unitconv: quantities with length/mass/time dimensions and temperature scales."""

from .dimension import (DIMENSIONLESS, LENGTH, MASS, TIME, Dimension, IncompatibleUnitsError,
                        UnitError, UnknownUnitError)
from .quantity import Quantity, convert, parse_quantity
from .temperature import convert_temperature, from_kelvin, normalize_scale, temperature_delta, to_kelvin
from .units import UNITS, Unit, parse_token, parse_unit
