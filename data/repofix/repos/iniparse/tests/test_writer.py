import pytest

from iniparse import Config, dumps, parse


def test_dumps_basic_layout():
    """Sections are separated by one blank line and use 'key = value'."""
    cfg = parse("[a]\nx=1\n[b]\ny :2\n")
    assert dumps(cfg) == "[a]\nx = 1\n\n[b]\ny = 2\n"


def test_dumps_default_first_and_empty_omitted():
    """DEFAULT is written first when it has options, and skipped when empty."""
    cfg = parse("[s]\nk = v\n[DEFAULT]\nd = 1\n")
    assert dumps(cfg) == "[DEFAULT]\nd = 1\n\n[s]\nk = v\n"
    assert dumps(parse("[s]\n")) == "[s]\n"
    assert dumps(Config()) == ""


def test_dumps_multiline_and_empty_values():
    """Continuation lines are indented and empty values are written as 'k ='."""
    cfg = Config()
    cfg.add_section("s")
    cfg.set("s", "text", "one\ntwo")
    cfg.set("s", "empty", "")
    assert dumps(cfg) == "[s]\ntext = one\n    two\nempty =\n"


def test_dumps_rejects_blank_continuation():
    """A multi-line value containing a blank line cannot be written."""
    cfg = Config()
    cfg.add_section("s")
    cfg.set("s", "k", "a\n\nb")
    with pytest.raises(ValueError):
        dumps(cfg)


def test_round_trip():
    """Parsing the dumped text reproduces the same data."""
    text = "[DEFAULT]\nd = 0\n[s]\nk = a\n  b\ne =\n[t]\nu: ${s:k}\n"
    first = parse(text)
    second = parse(dumps(first))
    assert second.defaults == first.defaults
    assert [second.section_dict(n) for n in second.sections()] == [
        {"k": "a\nb", "e": ""},
        {"u": "${s:k}"},
    ]
    assert second.get("t", "u") == "a\nb"
