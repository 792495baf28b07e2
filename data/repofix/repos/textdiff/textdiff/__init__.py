"""textdiff: LCS line diffs, unified-diff output and patch application."""

from .lcs import lcs, lcs_length, lcs_table, similarity
from .patch import PatchError, apply_patch, parse_range, parse_unified
from .script import DELETE, EQUAL, INSERT, Edit, apply_script, count_changes, edit_script
from .unified import Hunk, format_range, group_hunks, make_hunk, unified_diff
