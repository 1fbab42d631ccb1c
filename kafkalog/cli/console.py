"""Where the ``kafkalog`` command's output goes: data on stdout, diagnostics and progress on stderr.

Every subcommand writes through one :class:`Console`, so the rules live here once:

- stdout carries the data a script reads (dump lines, tables, JSON, CSV); stderr carries what a person
  reads (problems found, notes, progress);
- a progress bar is drawn only on a terminal, and only when it cannot tangle with the data: stderr must
  be a terminal, and a command whose data streams out as it goes (``dump``) draws none while stdout is a
  terminal too;
- tables are plain text in aligned columns, readable in a terminal and in a log file.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

if TYPE_CHECKING:
    from ..log.pending_deletions import UndeletedFile

from .._text import counted

__all__ = ["EXIT_FOUND", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "Console", "Progress", "counted",
           "format_bytes", "offset_range", "render_table"]

#: The exit statuses of every subcommand: success; problems found in the data (corruption, mismatches, a
#: failed check); bad usage or input that could not be read; interrupted (128 + SIGINT).
EXIT_OK = 0
EXIT_FOUND = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

T = TypeVar("T")


class Progress:
    """A progress bar on stderr (tqdm), or nothing at all when it would not be seen."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def reach(self, done: int, total: int | None) -> None:
        """Show ``done`` out of ``total``, for work whose size is learnt only once it starts."""
        if self._bar is not None:
            if total != self._bar.total:
                self._bar.total = total
            self._bar.update(done - self._bar.n)

    def describe(self, text: str) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class Console:
    """The two streams of one command run, with the progress and table helpers that write to them."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, progress: bool | None = None,
                 streaming_output: bool = False) -> None:
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        if progress is None:
            progress = _is_terminal(self.err) and not (streaming_output and _is_terminal(self.out))
        self.show_progress = progress

    # -- data ---------------------------------------------------------------------------------------

    def print(self, text: str = "") -> None:
        self.out.write(text)
        self.out.write("\n")

    def write(self, text: str) -> None:
        self.out.write(text)

    def json_line(self, obj: dict[str, Any]) -> None:
        self.out.write(json.dumps(obj, separators=(", ", ": ")))
        self.out.write("\n")

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[Any]], *,
              align_right: Iterable[int] = ()) -> None:
        for line in render_table(headers, rows, align_right=align_right):
            self.print(line)

    def csv(self, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        writer = csv.writer(self.out, lineterminator="\n")
        writer.writerow(headers)
        for row in rows:
            writer.writerow(["" if v is None else v for v in row])

    # -- diagnostics --------------------------------------------------------------------------------

    def error(self, text: str) -> None:
        self.out.flush()
        self.err.write(text)
        self.err.write("\n")
        self.err.flush()

    @contextmanager
    def progress(self, total: int | None, description: str, *, unit: str = "it",
                 unit_scale: bool = False) -> Iterator[Progress]:
        """A bar counting to ``total`` (``None`` when unknown); closed, and wiped, when the block ends."""
        bar = None
        if self.show_progress:
            from tqdm import tqdm

            bar = tqdm(total=total, desc=description, unit=unit, unit_scale=unit_scale, file=self.err,
                       leave=False, dynamic_ncols=True)
        progress = Progress(bar)
        try:
            yield progress
        finally:
            progress.close()

    def track(self, items: Sequence[T], description: str, *, unit: str = "it") -> Iterator[T]:
        """Iterate ``items`` with a bar that advances one step per item."""
        with self.progress(len(items), description, unit=unit) as bar:
            for item in items:
                yield item
                bar.update()


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:  # a closed stream
        return False


def render_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *,
                 align_right: Iterable[int] = ()) -> list[str]:
    """Lines of a table: a header, a rule, then one line per row, columns padded to their widest cell.

    ``None`` shows as ``-``; columns named in ``align_right`` (numbers) are right-aligned.
    """
    cells = [[str(h) for h in headers]]
    cells.extend(["-" if v is None else str(v) for v in row] for row in rows)
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    right = set(align_right)

    def line(row: list[str]) -> str:
        parts = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        return "  ".join(parts).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out.extend(line(row) for row in cells[1:])
    return out


def offset_range(log_start_offset: int, log_end_offset: int) -> str:
    """A log's offsets as the ``verify`` and ``stats`` tables show them: ``first..last``, both held, as Kafka's
    tools speak of a last offset (a log whose end offset is 100294 shows ``0..100293``); a log that holds no
    offset, ``empty at <log end offset>``."""
    if log_end_offset <= log_start_offset:
        return f"empty at {log_end_offset}"
    return f"{log_start_offset}..{log_end_offset - 1}"


def format_bytes(n: int | float) -> str:
    """A byte count as people read it: ``1.5 MiB``; exact below 1 KiB."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def report_undeleted_files(console: Console, command: str, files: Iterable[UndeletedFile]) -> None:
    """Say on stderr which files closing a log could not delete, and why (the library's warnings, which a command
    without ``-v`` does not show): segments it had replaced or removed, renamed ``.deleted``, which stay until the
    next open of the log for writing deletes them."""
    for file in files:
        console.error(f"kafkalog {command}: could not delete {file.path} ({file.reason}); it stays, and the next "
                      "open of the log deletes it")
