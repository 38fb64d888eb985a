"""What the ``skills`` commands print: tables and fields with rich, JSON as it always was.

- ``--json`` output is ``json.dumps(..., indent=2)`` on stdout, nothing else on stdout.
- On a terminal, tables fit its width and headers are bold; anywhere else (a pipe, a file,
  a test) there is no colour and no markup, lines carry no trailing spaces and nothing is
  wrapped, so the text greps and diffs.
- Text that is too long for its column is cut with an ellipsis, never silently.
- Data is never read as rich markup or emoji codes: a skill named ``[bold]`` prints as such.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from skills.display import shown

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

# rich and pydantic are imported where a table or a model is printed: `skills --version` and `--help`
# print neither, and starting Python with them costs more than the answer.

ELLIPSIS = "…"
PIPE_WIDTH = 4096
"""The width rich lays out for when stdout is not a terminal: wide enough never to wrap."""


def console(stderr: bool = False) -> Console:
    """A console on the current stdout (or stderr): made per call, so a redirected stream is honoured."""
    from rich.console import Console

    return Console(stderr=stderr, markup=False, emoji=False, highlight=False, soft_wrap=False)


def show(renderable: RenderableType) -> None:
    """Print a table or a grid: as rich lays it out on a terminal, as plain stripped lines elsewhere."""
    from rich.console import Console

    out = console()
    if out.is_terminal:
        out.print(renderable)
        return
    plain = Console(file=sys.stdout, width=PIPE_WIDTH, color_system=None, markup=False, emoji=False,
                    highlight=False)
    with plain.capture() as captured:
        plain.print(renderable)
    lines = [line.rstrip() for line in captured.get().splitlines()]
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    sys.stdout.flush()


def print_json(data: Any) -> None:
    """``data`` (models, lists of models, plain values) as indented JSON on stdout."""
    print(json.dumps(jsonable(data), indent=2, ensure_ascii=False), flush=True)


def jsonable(data: Any) -> Any:
    from pydantic import BaseModel

    if isinstance(data, BaseModel):
        return data.model_dump(mode="json", by_alias=True)
    if isinstance(data, list):
        return [jsonable(d) for d in data]
    return data


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], *, cut: dict[str, int] | None = None,
          styles: dict[str, dict[str, str]] | None = None) -> None:
    """A table with one line per row; ``(none)`` when there are no rows.

    ``cut``: the columns whose text is cut (with an ellipsis) past this many characters, and
    squeezed onto one line; on a terminal they also give way first when the table is too wide.
    ``styles``: per column, a style for some values (``{"STATUS": {"error": "red"}}``), on a terminal.
    """
    from rich.table import Table
    from rich.text import Text

    rows = list(rows)
    if not rows:
        print("(none)", flush=True)
        return
    cut = cut or {}
    styles = styles or {}
    texts = [[one_line(str(value)) for value in row] for row in rows]
    texts = [[shorten(text, cut[name]) if name in cut else text for name, text in zip(header, row, strict=True)]
             for row in texts]
    widths = [max(len(name), *(len(row[i]) for row in texts)) for i, name in enumerate(header)]
    out = console()
    if out.is_terminal:
        widths = _fit(widths, [name in cut for name in header], [len(name) for name in header], out.width)
    grid = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold",
                 highlight=False)
    for name, width in zip(header, widths, strict=True):
        grid.add_column(name, no_wrap=True, overflow="ellipsis", width=width)
    for row in texts:
        grid.add_row(*(Text(text, style=styles.get(name, {}).get(text, ""))
                       for name, text in zip(header, row, strict=True)))
    show(grid)


def _fit(widths: list[int], shrinkable: list[bool], floors: list[int], room: int) -> list[int]:
    """Column widths that fit ``room`` (with two spaces between columns), taken from the widest
    shrinkable columns first; the others (ids, times, states) keep theirs."""
    widths = list(widths)
    excess = sum(widths) + 2 * (len(widths) - 1) - room
    while excess > 0:
        candidates = [i for i, ok in enumerate(shrinkable) if ok and widths[i] > max(floors[i], 4)]
        if not candidates:
            break
        widest = max(candidates, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return widths


def fields(rows: Iterable[tuple[str, Any]], *, key_width: int = 15, indent: int = 0) -> None:
    """``key  value`` lines, keys in a column of ``key_width``; a long value wraps under itself
    on a terminal and stays one line elsewhere."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(min_width=key_width, style="bold", no_wrap=True)
    grid.add_column()
    for key, value in rows:
        grid.add_row(Text(key), Text(str(value)))
    if indent:
        from rich.padding import Padding

        show(Padding(grid, (0, 0, 0, indent)))
    else:
        show(grid)


def one_line(text: str) -> str:
    """Line breaks and runs of blanks as single spaces: one row of a table is one line; other characters a
    terminal would act on are shown as their escapes (``skills.display.shown``)."""
    return shown(" ".join(text.split()) if ("\n" in text or "\r" in text or "\t" in text) else text)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when anything was cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + ELLIPSIS


def when(moment: datetime | None) -> str:
    """A moment in this machine's time zone, to the second; ``-`` for none."""
    return moment.astimezone().isoformat(timespec="seconds") if moment else "-"
