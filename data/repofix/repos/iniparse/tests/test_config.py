import pytest

from iniparse import Config, NoOptionError, NoSectionError, parse, to_bool, to_list

TEXT = """[DEFAULT]
host = localhost
port = 80

[web]
port = 8080
debug = yes
ratio = 2.5
names = a, b,, c

[db]
user = admin
"""


def test_sections_in_order():
    """Sections keep file order and DEFAULT is not a section."""
    cfg = parse(TEXT)
    assert cfg.sections() == ["web", "db"]
    assert cfg.has_section("DEFAULT") is False


def test_defaults_are_inherited_and_overridden():
    """Sections see DEFAULT values unless they define their own."""
    cfg = parse(TEXT)
    assert cfg.get("db", "host") == "localhost"
    assert cfg.get("db", "port") == "80"
    assert cfg.get("web", "port") == "8080"


def test_options_own_first_then_defaults():
    """options() lists own keys, then inherited keys not already present."""
    cfg = parse(TEXT)
    assert cfg.options("web") == ["port", "debug", "ratio", "names", "host"]
    assert cfg.options("DEFAULT") == ["host", "port"]


def test_has_option():
    """has_option is case-insensitive, sees defaults and is False for unknown sections."""
    cfg = parse(TEXT)
    assert cfg.has_option("db", "HOST") is True
    assert cfg.has_option("db", "debug") is False
    assert cfg.has_option("nope", "host") is False
    assert cfg.has_option("DEFAULT", "port") is True


def test_missing_values_raise_or_fall_back():
    """Missing options raise NoOptionError unless a fallback is given."""
    cfg = parse(TEXT)
    with pytest.raises(NoOptionError):
        cfg.get("db", "password")
    with pytest.raises(NoSectionError):
        cfg.get("cache", "size")
    assert cfg.get("db", "password", fallback=None) is None
    assert cfg.get("cache", "size", fallback="64") == "64"


def test_getint_and_getfloat():
    """Numeric getters convert text, including negatives."""
    cfg = parse(TEXT + "offset = -7\n")
    assert cfg.getint("web", "port") == 8080
    assert cfg.getint("db", "offset") == -7
    assert cfg.getfloat("web", "ratio") == 2.5


def test_typed_fallback_is_returned_unconverted():
    """A fallback is returned as-is, but a present bad value still raises."""
    cfg = parse(TEXT)
    assert cfg.getint("db", "timeout", fallback="5") == "5"
    assert cfg.getint("db", "port", fallback="5") == 80
    assert cfg.getboolean("db", "debug", fallback=None) is None
    with pytest.raises(ValueError):
        cfg.getint("db", "user", fallback=3)


@pytest.mark.parametrize(
    "text,expected",
    [("yes", True), ("On", True), ("TRUE", True), ("1", True),
     ("no", False), ("off", False), ("False", False), ("0", False)],
    ids=["yes", "on", "true", "one", "no", "off", "false", "zero"],
)
def test_to_bool_words(text, expected):
    """Boolean words are recognised case-insensitively."""
    assert to_bool(text) is expected


def test_getboolean_rejects_other_words():
    """getboolean reads 'yes' and rejects unknown words."""
    cfg = parse(TEXT)
    assert cfg.getboolean("web", "debug") is True
    with pytest.raises(ValueError):
        to_bool("maybe")
    with pytest.raises(ValueError):
        to_bool("")


def test_lists():
    """getlist strips items, drops empties and also splits on newlines."""
    cfg = parse(TEXT)
    assert cfg.getlist("web", "names") == ["a", "b", "c"]
    assert to_list("x; y\nz", sep=";") == ["x", "y", "z"]
    assert to_list("") == []
    assert cfg.getlist("db", "tags", fallback=[]) == []


def test_set_add_and_remove():
    """Options can be set, overwritten and removed; sections can be added."""
    cfg = Config()
    cfg.add_section("s")
    cfg.set("s", "Key", "1")
    cfg.set("s", "key", "2")
    assert cfg.section_dict("s") == {"key": "2"}
    assert cfg.remove_option("s", "KEY") is True
    assert cfg.remove_option("s", "key") is False
    assert cfg.section_dict("s") == {}


def test_add_section_guards():
    """DEFAULT and existing names cannot be added as sections."""
    cfg = Config()
    cfg.add_section("a")
    with pytest.raises(ValueError):
        cfg.add_section("a")
    with pytest.raises(ValueError):
        cfg.add_section("DEFAULT")
    with pytest.raises(NoSectionError):
        cfg.set("b", "k", "v")


def test_items_are_interpolated():
    """items() pairs keys with expanded values, own keys first."""
    cfg = parse("[DEFAULT]\nbase = /srv\n[app]\npath = ${base}/app\n")
    assert cfg.items("app") == [("path", "/srv/app"), ("base", "/srv")]
