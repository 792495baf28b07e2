import pytest

from iniparse import (MAX_DEPTH, InterpolationCycleError, InterpolationDepthError,
                      InterpolationError, expand_text, parse, split_reference)


def test_same_section_reference():
    """${key} refers to another option in the same section."""
    cfg = parse("[s]\nname = world\ngreeting = hello ${name}!\n")
    assert cfg.get("s", "greeting") == "hello world!"


def test_cross_section_reference():
    """${section:key} refers to an option of another section."""
    cfg = parse("[paths]\nroot = /opt\n[app]\nbin = ${paths:root}/bin\n")
    assert cfg.get("app", "bin") == "/opt/bin"


def test_default_values_resolve_in_requesting_section():
    """References inside a DEFAULT value are looked up in the section asking for it."""
    cfg = parse("[DEFAULT]\nurl = http://${host}/\n[a]\nhost = alpha\n[b]\nhost = beta\n")
    assert cfg.get("a", "url") == "http://alpha/"
    assert cfg.get("b", "url") == "http://beta/"


def test_raw_and_escaped_dollar():
    """raw=True skips expansion and $$ produces a literal dollar."""
    cfg = parse("[s]\nx = 1\nprice = $$${x}\n")
    assert cfg.get("s", "price") == "$1"
    assert cfg.get("s", "price", raw=True) == "$$${x}"


def test_bad_dollar_usage():
    """A lone '$' (mid-text or trailing) is an interpolation error."""
    cfg = parse("[s]\na = $x\nb = cost 5$\n")
    with pytest.raises(InterpolationError):
        cfg.get("s", "a")
    with pytest.raises(InterpolationError):
        cfg.get("s", "b")


def test_malformed_references():
    """Empty names in ${} or ${sec:} are rejected."""
    cfg = parse("[s]\na = ${}\nb = ${s:}\nc = ${:a}\n")
    for key in ("a", "b", "c"):
        with pytest.raises(InterpolationError):
            cfg.get("s", key)


def test_split_reference():
    """References split into (section, lowercased key), defaulting to the current section."""
    assert split_reference("Name", "s") == ("s", "name")
    assert split_reference(" t : B ", "s") == ("t", "b")
    for bad in ("", "  ", "t:", ":b"):
        with pytest.raises(InterpolationError):
            split_reference(bad, "s")


def test_unresolved_reference():
    """Missing targets raise InterpolationError, not NoOptionError."""
    cfg = parse("[s]\na = ${missing}\nb = ${nosec:a}\n")
    with pytest.raises(InterpolationError) as info:
        cfg.get("s", "a")
    assert "${missing}" in str(info.value)
    with pytest.raises(InterpolationError):
        cfg.get("s", "b")


def test_cycles_are_detected():
    """Self references and longer cycles raise InterpolationCycleError."""
    cfg = parse("[s]\nme = ${me}\na = ${b}\nb = ${t:c}\n[t]\nc = ${s:a}\n")
    with pytest.raises(InterpolationCycleError):
        cfg.get("s", "me")
    with pytest.raises(InterpolationCycleError) as info:
        cfg.get("s", "a")
    assert "s:a -> s:b -> t:c -> s:a" in str(info.value)


def test_repeated_reference_is_not_a_cycle():
    """Using the same key twice in one value is fine."""
    cfg = parse("[s]\nx = ab\ny = ${x}-${X}\n")
    assert cfg.get("s", "y") == "ab-ab"
    assert expand_text(cfg, "s", "<${x}>") == "<ab>"


def _chain(length: int) -> str:
    lines = ["[s]"]
    for i in range(length - 1):
        lines.append(f"k{i} = ${{k{i + 1}}}")
    lines.append(f"k{length - 1} = end")
    return "\n".join(lines) + "\n"


def test_depth_limit_boundary():
    """A chain of MAX_DEPTH options expands; one more level is too deep."""
    assert MAX_DEPTH == 10
    assert parse(_chain(MAX_DEPTH)).get("s", "k0") == "end"
    with pytest.raises(InterpolationDepthError):
        parse(_chain(MAX_DEPTH + 1)).get("s", "k0")
