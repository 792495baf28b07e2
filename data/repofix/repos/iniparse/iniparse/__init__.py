"""iniparse: a small INI parser with DEFAULT inheritance and interpolation."""

from .config import DEFAULT_SECTION, Config, to_bool, to_list
from .errors import (IniError, InterpolationCycleError, InterpolationDepthError,
                     InterpolationError, NoOptionError, NoSectionError, ParseError)
from .interpolation import MAX_DEPTH, expand_text, split_reference
from .parser import parse, strip_inline_comment
from .writer import dumps
