"""Tables the commands print, readable at 80 columns and when piped (rich's width then is 80): a
cell is never cut with an ellipsis (a long name wraps inside its cell instead) and a column that holds
nothing is left out. Every command's rich Table goes through `readable` before it is printed."""

from __future__ import annotations

from rich.table import Table

NAME_WIDTH = 32  # a first column no wider than this is kept on one line


def readable(table: Table) -> Table:
    """`table` with its first column (what names the row: a target, a task, a file) kept whole when its
    names are short, every other column wrapping instead of cutting with an ellipsis, and its empty
    columns dropped."""
    if table.row_count:
        table.columns = [c for c in table.columns if any(str(cell).strip() for cell in c.cells)]
    for column in table.columns:
        column.overflow = "fold"
        column.no_wrap = False
    first = table.columns[0] if table.columns else None
    if first is not None and max((len(str(cell)) for cell in first.cells), default=0) <= NAME_WIDTH:
        first.no_wrap = True  # names (targets, tasks, files) stay whole; longer text (a path) wraps
    return table
