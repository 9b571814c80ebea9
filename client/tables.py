"""Tables the commands print, readable at 80 columns and when piped (rich's width then is 80): a
cell is never cut with an ellipsis (a long name wraps inside its cell instead) and a column that holds
nothing is left out. Every command's rich Table goes through `readable` before it is printed."""

from __future__ import annotations

from rich.table import Table


def readable(table: Table) -> Table:
    """`table` with its first column (what names the row: a target, a task, a file) never wrapped or
    cut, every other column wrapping instead of cutting with an ellipsis, and its empty columns dropped."""
    if table.row_count:
        table.columns = [c for c in table.columns if any(str(cell).strip() for cell in c.cells)]
    for column in table.columns:
        column.overflow = "fold"
        column.no_wrap = False
    if table.columns:
        table.columns[0].no_wrap = True
    return table
