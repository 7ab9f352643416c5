"""Tables and text that read well at any width: a terminal of 80 or 200 columns, or a pipe.

Every table of every command is a :class:`FitTable`: described as data (columns and string
cells) and laid out only when printed, at the width the console has. The layout never cuts a
number or a name: a column is never narrower than its longest cell (columns marked
``wrap=True`` — sentences — may wrap between words, and headers wrap between words); when even
that is too wide, the table is **stacked**: its key columns (the row labels) are repeated and the
other columns go into as many consecutive tables as needed, each titled "(continued)". New rows
or columns need no special case: the same rule fits them.

Piped output (stdout not a terminal) with no ``COLUMNS`` is laid out without a width limit:
sentences are not hard-wrapped, tables take their natural width, and trailing spaces are
stripped (:func:`fleetopt.render.output.emit`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich import box as rich_box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

#: Width used for piped output when COLUMNS is not set: wide enough that nothing wraps.
UNLIMITED_WIDTH = 10_000


@dataclass(frozen=True)
class Column:
    """One column: its header, alignment and whether its cells may wrap between words."""

    header: str = ""
    justify: str = "right"
    wrap: bool = False


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


def _longest_line(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


class FitTable:
    """A table that fits the console it is printed on, stacking its columns when it must.

    Used like :class:`rich.table.Table` (``add_column``, ``add_row``, ``console.print(table)``);
    cells are plain text (never markup). ``key_columns`` leading columns (the row labels) are
    repeated in every stacked part. ``plain=True`` draws no borders (a two-column list).
    """

    def __init__(
        self,
        title: str | None = None,
        *,
        key_columns: int = 1,
        show_header: bool = True,
        title_justify: str = "left",
        plain: bool = False,
    ) -> None:
        self.title = title
        self.key_columns = key_columns
        self.show_header = show_header
        self.title_justify = title_justify
        self.plain = plain
        self.columns: list[Column] = []
        self.rows: list[list[str]] = []

    def add_column(self, header: str = "", *, justify: str = "right", wrap: bool = False) -> None:
        self.columns.append(Column(header, justify, wrap))

    def add_row(self, *cells: object) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells in a table of {len(self.columns)} columns")
        self.rows.append(["" if cell is None else str(cell) for cell in cells])

    # ----------------------------------------------------------------------------- measuring

    def _header_of(self, index: int) -> str:
        return self.columns[index].header if self.show_header else ""

    def natural_width(self, index: int) -> int:
        """Widest cell or header of a column, unwrapped."""
        cells = [row[index] for row in self.rows]
        return max([_longest_line(self._header_of(index))] + [_longest_line(c) for c in cells])

    def min_width(self, index: int) -> int:
        """Narrowest a column may be: its longest cell (longest word if it wraps) or header word."""
        measure = _longest_word if self.columns[index].wrap else _longest_line
        cells = [measure(row[index]) for row in self.rows]
        return max([_longest_word(self._header_of(index)), 1] + cells)

    def overhead(self, column_count: int) -> int:
        """Characters a table of ``column_count`` columns spends on borders and padding."""
        if self.plain:
            return 2 * (column_count - 1)  # one space either side of each inner edge
        return 3 * column_count + 1  # "│ " + " " per column, and the closing edge

    # ------------------------------------------------------------------------------ layout

    def layout(self, width: int) -> list[tuple[list[int], list[int]]]:
        """The stacked parts at ``width``: for each, its column indices and their widths."""
        count = len(self.columns)
        keys = list(range(min(self.key_columns, count)))
        others = list(range(len(keys), count))
        natural = [self.natural_width(i) for i in range(count)]
        minimum = [self.min_width(i) for i in range(count)]

        def fits(indices: Sequence[int], widths: Sequence[int]) -> bool:
            return sum(widths[i] for i in indices) + self.overhead(len(indices)) <= width

        groups: list[list[int]] = []
        current: list[int] = []
        for index in others:
            if current and not fits(keys + current + [index], minimum):
                groups.append(current)
                current = []
            current.append(index)
        groups.append(current)
        if len(groups) > 1:  # as many parts as greedy packing needs, but of even sizes when they fit
            size = -(-len(others) // len(groups))
            even = [others[k : k + size] for k in range(0, len(others), size)]
            if len(even) == len(groups) and all(fits(keys + group, minimum) for group in even):
                groups = even
        return [self._widths(keys + group, natural, minimum, width) for group in groups]

    def _widths(
        self, indices: list[int], natural: Sequence[int], minimum: Sequence[int], width: int
    ) -> tuple[list[int], list[int]]:
        """Natural widths, shrunk (widest slack first) toward the minimums until the part fits."""
        widths = {i: natural[i] for i in indices}
        excess = sum(widths.values()) + self.overhead(len(indices)) - width
        while excess > 0:
            slack = [i for i in indices if widths[i] > minimum[i]]
            if not slack:
                break  # cannot fit even at the minimums: the console folds, never truncates
            widest = max(slack, key=lambda i: (widths[i] - minimum[i], widths[i]))
            widths[widest] -= 1
            excess -= 1
        return indices, [widths[i] for i in indices]

    def _rich_table(self, indices: list[int], widths: list[int]) -> Table:
        table = Table(
            show_header=self.show_header,
            box=None if self.plain else rich_box.HEAVY_HEAD,
            pad_edge=not self.plain,
        )
        for index, column_width in zip(indices, widths, strict=True):
            column = self.columns[index]
            table.add_column(
                Text(column.header),
                justify=column.justify,  # type: ignore[arg-type]
                width=column_width,
                overflow="fold",
            )
        for row in self.rows:
            table.add_row(*(Text(row[i]) for i in indices))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Each part under its title; the title is a line of its own, so it wraps at the console's
        width, not the (narrower) table's."""
        renderables: list = []
        for part, (indices, widths) in enumerate(self.layout(options.max_width)):
            if self.title:
                title = self.title if part == 0 else f"{self.title} (continued)"
                renderables.append(Text(title, justify=self.title_justify))  # type: ignore[arg-type]
            renderables.append(self._rich_table(indices, widths))
        yield Group(*renderables)


def bullets(items: Iterable[str], marker: str = "  - ") -> Table:
    """A list whose items wrap under their own first word (a hanging indent), never under the marker."""
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for item in items:
        grid.add_row(Text(marker), Text(item))
    return grid
