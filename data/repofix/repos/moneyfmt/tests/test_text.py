import pytest

from moneyfmt import Money, MoneyFormatError, format_money, group_thousands, parse_money


def test_parse_plain_amounts():
    """Thousands separators and one or two decimals are accepted."""
    assert parse_money("1,234.56") == Money(123456, "USD")
    assert parse_money("0.5") == Money(50, "USD")
    assert parse_money("12") == Money(1200, "USD")
    assert parse_money("  7.05 ") == Money(705, "USD")
    assert parse_money("999") == Money(99900, "USD")
    assert parse_money("123,456") == Money(12345600, "USD")


def test_parse_negative_forms():
    """A leading minus or surrounding parentheses mean negative."""
    assert parse_money("-1,000.00") == Money(-100000, "USD")
    assert parse_money("(7.00)") == Money(-700, "USD")
    assert parse_money("-0.01") == Money(-1, "USD")


def test_parse_rejects_bad_grouping():
    """Groups after the first must have exactly three digits."""
    for text in ("12,34", "1,2345", ",123", "1234,567", "1,,234"):
        with pytest.raises(MoneyFormatError):
            parse_money(text)


def test_parse_rejects_malformed_numbers():
    """Letters, empty strings, dangling points and extra decimals are rejected."""
    for text in ("abc", "", "-", "1.", ".5", "1.234", "1.2.3", "(", "(7.00", "7.00)", "--5", "1.-5"):
        with pytest.raises(MoneyFormatError):
            parse_money(text)


def test_parse_respects_currency_minor_units():
    """Yen has no decimals; dinar has three."""
    assert parse_money("1,000", "JPY") == Money(1000, "JPY")
    assert parse_money("1.234", "KWD") == Money(1234, "KWD")
    assert parse_money("1.5", "KWD") == Money(1500, "KWD")
    with pytest.raises(MoneyFormatError):
        parse_money("10.5", "JPY")


def test_parse_custom_separators():
    """European style uses '.' for thousands and ',' for the decimal point."""
    assert parse_money("1.234,56", "EUR", sep=".", point=",") == Money(123456, "EUR")


@pytest.mark.parametrize(
    "digits,expected",
    [("", ""), ("1", "1"), ("123", "123"), ("1234", "1,234"), ("123456", "123,456"), ("1234567", "1,234,567")],
    ids=["empty", "one", "three", "four", "six", "seven"],
)
def test_group_thousands(digits, expected):
    """Separators are inserted every three digits from the right."""
    assert group_thousands(digits) == expected


def test_format_positive_amounts():
    """Cents are zero-padded and thousands are grouped."""
    assert format_money(Money(123456, "USD")) == "1,234.56"
    assert format_money(Money(5, "USD")) == "0.05"
    assert format_money(Money(0, "USD")) == "0.00"
    assert format_money(Money(100000000, "USD"), symbol="$") == "$1,000,000.00"
    assert format_money(Money(123456789, "EUR"), sep=".", point=",") == "1.234.567,89"


def test_format_negative_styles():
    """Negative amounts use a leading minus by default or parentheses on request."""
    assert format_money(Money(-123456, "USD"), symbol="$") == "-$1,234.56"
    assert format_money(Money(-5, "USD"), negative="parens") == "(0.05)"
    assert format_money(Money(5, "USD"), negative="parens") == "0.05"
    with pytest.raises(ValueError):
        format_money(Money(5, "USD"), negative="red")


def test_format_other_minor_units():
    """Yen prints without a point; dinar prints three decimals."""
    assert format_money(Money(1234567, "JPY")) == "1,234,567"
    assert format_money(Money(1234, "KWD")) == "1.234"
    assert format_money(Money(-7, "KWD")) == "-0.007"


def test_format_parse_round_trip():
    """Parsing the formatted text gives the original amount back."""
    for amount in (0, 1, -99, 100000, -123456789):
        m = Money(amount, "USD")
        assert parse_money(format_money(m)) == m
        assert parse_money(format_money(m, negative="parens")) == m
