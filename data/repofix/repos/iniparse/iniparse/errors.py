"""Exception hierarchy for iniparse."""


class IniError(Exception):
    """Base class for every error raised by iniparse."""


class ParseError(IniError):
    """Raised when INI text is malformed."""

    def __init__(self, line_no: int, message: str) -> None:
        super().__init__(f"line {line_no}: {message}")
        self.line_no = line_no
        self.message = message


class NoSectionError(IniError, KeyError):
    """Raised when a section does not exist."""


class NoOptionError(IniError, KeyError):
    """Raised when an option does not exist in a section (or DEFAULT)."""


class InterpolationError(IniError):
    """Raised when a ${...} reference cannot be expanded."""


class InterpolationCycleError(InterpolationError):
    """Raised when references form a cycle."""


class InterpolationDepthError(InterpolationError):
    """Raised when references are nested too deeply."""
