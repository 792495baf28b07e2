import pytest

from csvdialect import CsvError, Dialect, has_header, sniff


def test_sniff_comma_and_semicolon():
    """The delimiter that appears consistently on every line wins."""
    assert sniff("a,b,c\n1,2,3\n").delimiter == ","
    assert sniff("a;b;c\n1,5;2;3\n4;5,5;6\n").delimiter == ";"


def test_sniff_tab_and_pipe():
    """Tabs and pipes are among the default candidates."""
    assert sniff("x\ty\n1\t2\n").delimiter == "\t"
    assert sniff("x|y|z\n1|2|3\n").delimiter == "|"


def test_sniff_ignores_delimiters_inside_quotes():
    """Commas inside quoted fields do not count towards the delimiter."""
    sample = 'name;note\n"Smith, J";"a, b, c"\nLee;"x, y"\n'
    assert sniff(sample).delimiter == ";"
    assert sniff('"a,b,c";d\n"e,f,g";h\n').delimiter == ";"


def test_sniff_prefers_consistency_then_count():
    """A delimiter seen the same number of times on more lines is preferred."""
    assert sniff("a:b,c\nd:e,f\ng:h:i,j\n").delimiter == ","
    assert sniff("a:b:c,d\ne:f:g,h\n").delimiter == ":"
    assert sniff("a,b;c\nd,e;f\n").delimiter == ","


def test_sniff_needs_half_the_lines_consistent():
    """A delimiter must have the same count on at least half of the lines."""
    assert sniff("a,b\nc,d\ne,f,g\nh,i,j,k\n").delimiter == ","
    with pytest.raises(CsvError):
        sniff("a,b\nc,d,e\nf,g,h,i\n")


def test_sniff_restricted_candidates():
    """Only the given candidate delimiters are considered."""
    assert sniff("a,b;c\nd,e;f\n", delimiters=";").delimiter == ";"
    with pytest.raises(CsvError):
        sniff("abc\ndef\n")


def test_sniff_empty_sample_raises():
    """An empty or blank sample cannot be sniffed."""
    with pytest.raises(CsvError):
        sniff("")
    with pytest.raises(CsvError):
        sniff("  \n\n")


def test_sniff_quotechar():
    """Single quotes are chosen only when they open more fields than double quotes."""
    assert sniff("'a b',c\n'd e',f\n").quotechar == "'"
    assert sniff("don't,x\nit's,y\n").quotechar == '"'
    assert sniff("so I'm,x\nas I'd,y\n").quotechar == '"'
    assert sniff("'a b',c\nd,e\n").quotechar == "'"
    assert sniff('"a",b\n\'c\',"d"\n').quotechar == '"'


def test_sniff_initial_space():
    """skip_initial_space is set when most delimiters are followed by a space."""
    assert sniff("a, b, c\n1, 2, 3\n").skip_initial_space is True
    assert sniff("a, b,c\n1,2,3\n").skip_initial_space is False
    assert sniff("a, b,c\n1, 2,3\n").skip_initial_space is False
    assert sniff("a,b\n1,2\n") == Dialect()


def test_has_header_numeric_columns():
    """A text row above numeric columns is a header."""
    assert has_header("name,age,score\nann,31,4.5\nbob,40,3.0\n") is True
    assert has_header("1,2\n3,4\n5,6\n") is False


def test_has_header_length_columns():
    """A first row whose lengths differ from fixed-length columns is a header."""
    assert has_header("code,country\nAB,XX\nCD,YY\n") is True
    assert has_header("ZZ,QQ\nAB,XX\nCD,YY\n") is False


def test_has_header_needs_two_rows():
    """A single row is never a header and a dialect can be passed explicitly."""
    assert has_header("a,b\n") is False
    assert has_header("a;b\n1;2\n", Dialect(delimiter=";")) is True


def test_has_header_mixed_votes():
    """Votes for and against are summed; ties mean no header."""
    assert has_header("id,label\n1,apple\n2,fig\n") is True
    assert has_header("7,xy\n1,ab\n2,cd\n") is False
    assert has_header("id,xy\n1,ab\n2,cd\n") is False
    assert has_header("id,k,v\n1\n2\n", Dialect()) is True
    assert has_header("id,7\n1\n2\n", Dialect()) is True


def test_has_header_vote_weights():
    """Each column casts exactly one vote for or against a header."""
    assert has_header("7,name,x\n1,ab,5\n2,cd,6\n") is True
    assert has_header("name,ab,v\n1,xy,3\n2,zw,4\n") is True
    assert has_header("1,abc\n3,xy\n5,zw\n") is False
