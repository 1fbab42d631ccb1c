"""The reference's figures, drawn at build time (matplotlib, Agg) from logs that kafkalog writes.

Nothing in a figure is typed in by hand: the segment layout figure is a real log's segments, batches
and index entries; the cleaner figure is a real compaction's input, offset map and output; the swap
figure lists the file names a real cleaning round goes through, taken from the directory at each step.
The SVG pictures of ``kafkalog_pictures`` are drawn here too.  The files go to ``docs/_generated/`` (not in
git), which the pages include as ``/_generated/<name>``.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from kafkalog_pictures import PICTURES, quiet_kafkalog
from matplotlib.patches import FancyArrowPatch, Rectangle
from sphinx.application import Sphinx

from kafkalog.cleaner import Cleaner
from kafkalog.cleaner.config import CleanerConfig
from kafkalog.cleaner.manager import LogToClean
from kafkalog.cleaner.offset_map import SkimpyOffsetMap
from kafkalog.cleaner.throttler import Throttler
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.record import MemoryRecords
from kafkalog.scheduler import MockTime
from kafkalog.segment import LogSegment

OUT = Path(__file__).resolve().parent.parent / "_generated"
BASE_TIME = 1_700_000_000_000
KEY_COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2"]


def _box(ax: Any, x: float, y: float, w: float, h: float, text: str, colour: str = "#dde6f0", size: int = 7,
         text_colour: str = "black") -> None:
    ax.add_patch(Rectangle((x, y), w, h, facecolor=colour, edgecolor="#333333", linewidth=0.6))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, color=text_colour)


def _arrow(ax: Any, start: tuple[float, float], end: tuple[float, float], colour: str = "#555555") -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=7, color=colour, linewidth=0.7))


# -- the segment layout -----------------------------------------------------------------------------

def segment_layout(path: Path) -> None:
    """Two segments of a real log: the batches of each ``.log`` to scale, and where each ``.index`` and
    ``.timeindex`` entry points."""
    with tempfile.TemporaryDirectory() as tmp:
        config = LogConfig({"segment.bytes": 1400, "index.interval.bytes": 300})
        with Log(Path(tmp) / "orders-0", config, time=MockTime()) as log:
            for n in range(14):
                records = [(f"k{n}".encode(), f"order {n}.{i} ".encode() * 3, BASE_TIME + 10 * n + i)
                           for i in range(1 + n % 3)]
                log.append(MemoryRecords.with_records(records))
            segments = log.log_segments()[:2]
            rows = []
            for segment in segments:
                batches = [(int(b["position"]), int(b["size"]), int(b["base_offset"]), int(b["last_offset"]))
                           for b in segment.log.scan().batches]
                index = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
                times = [segment.time_index.entry(i) for i in range(segment.time_index.entries)]
                rows.append((segment.base_offset, segment.size(), batches, index, times))
    fig, ax = plt.subplots(figsize=(9.5, 1.9 * len(rows) + 0.4))
    scale = 8.0 / max(size for _b, size, *_ in rows)
    for r, (base, _size, batches, index, times) in enumerate(rows):
        y = (len(rows) - 1 - r) * 2.0
        ax.text(-0.1, y + 1.05, f"{base:020d}.log", ha="right", va="center", fontsize=7, family="monospace")
        for i, (position, size, first, last) in enumerate(batches):
            _box(ax, position * scale, y + 0.8, size * scale, 0.5,
                 f"{first}" if first == last else f"{first}-{last}", "#dde6f0" if i % 2 else "#c6d4e6")
        ax.text(-0.1, y + 0.25, ".index\n(offset → position)", ha="right", va="center", fontsize=7)
        for i, entry in enumerate(index):
            x = 0.2 + i * 1.25
            _box(ax, x, y + 0.05, 1.1, 0.35, f"{entry.offset} → {entry.position}", "#fbe3c8")
            _arrow(ax, (x + 0.55, y + 0.4), (entry.position * scale + 0.02, y + 0.8), "#c0772f")
        ax.text(-0.1, y + 1.61, ".timeindex (time → offset)", ha="right", va="center", fontsize=7)
        for entry in times:
            offset_batch = next(b for b in batches if b[2] <= entry.offset <= b[3])
            x = offset_batch[0] * scale + offset_batch[1] * scale / 2
            _box(ax, x - 0.55, y + 1.45, 1.1, 0.32, f"+{entry.timestamp - BASE_TIME} ms → {entry.offset}",
                 "#d9ecd5", size=6)
            _arrow(ax, (x, y + 1.45), (x, y + 1.3), "#3f7f3a")
    ax.set_xlim(-2.6, 8.6)
    ax.set_ylim(-0.2, 2.0 * len(rows))
    ax.axis("off")
    ax.set_title("A log of two segments as kafkalog wrote it: batches to scale (labels: offsets), "
                 "index entries every index.interval.bytes (300 B here)", fontsize=8)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)


# -- the cleaner's two passes -------------------------------------------------------------------------

@dataclass
class _Compaction:
    before: list[tuple[int, str, str | None]]
    offset_map: dict[str, int]
    after: list[tuple[int, str, str | None]]
    #: (what happened, the segment files then), at each rename of the round's replace
    swap_steps: list[tuple[str, list[str]]]


def _log_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if ".log" in p.name)


@functools.cache
def _compact_example() -> _Compaction:
    updates = [("A", "1"), ("B", "1"), ("C", "1"), ("A", "2"), ("D", "1"), ("B", "2"), ("C", None),
               ("E", "1"), ("A", "3"), ("D", "2"), ("E", "2"), ("B", "3")]
    with tempfile.TemporaryDirectory() as tmp:
        time = MockTime()
        config = LogConfig({"cleanup.policy": "compact", "segment.bytes": 400, "delete.retention.ms": 86_400_000})
        with Log(Path(tmp) / "users-0", config, time=time, scheduler=time.scheduler) as log:
            for i, (key, value) in enumerate(updates):
                log.append(MemoryRecords.with_records([(key.encode(), None if value is None else value.encode(),
                                                        BASE_TIME + i)]))
            log.roll()
            # Small segments to write, a larger limit to clean: the cleaner groups the segments into one.
            log.config = LogConfig({**config.to_props(), "segment.bytes": 4096})
            before = [(r.offset, r.key.decode(), None if r.value is None else r.value.decode())
                      for r in log.records() if r.key is not None]
            offset_map = SkimpyOffsetMap(64 * 1024)
            defaults = CleanerConfig()
            cleaner = Cleaner(0, offset_map, defaults.io_buffer_size, defaults.max_message_size, 0.9,
                              Throttler(float("inf"), time=time), time, lambda _tp: None)
            steps: list[tuple[str, list[str]]] = []
            rename = LogSegment.change_file_suffixes

            def recording(segment: LogSegment, old_suffix: str, new_suffix: str) -> None:
                if not steps:
                    steps.append(("clean into .cleaned", _log_files(log.dir)))
                rename(segment, old_suffix, new_suffix)
                what = f"{old_suffix or 'live'} → {new_suffix or 'live'}"
                if steps[-1][0] == what:  # one step for all the old segments' renames
                    steps.pop()
                steps.append((what, _log_files(log.dir)))

            LogSegment.change_file_suffixes = recording  # type: ignore[method-assign]
            try:
                cleaner.clean(LogToClean(log.topic_partition, log, 0, log.active_segment.base_offset))
            finally:
                LogSegment.change_file_suffixes = rename  # type: ignore[method-assign]
            latest = {key: offset for offset, key, _v in before}
            after = [(r.offset, r.key.decode(), None if r.value is None else r.value.decode())
                     for r in log.records() if r.key is not None]
            time.sleep(config.file_delete_delay_ms + 1)
            steps.append(("file.delete.delay.ms later", _log_files(log.dir)))
    return _Compaction(before, latest, after, steps)


def cleaner_passes(path: Path) -> None:
    """Pass 1 reads the dirty records into the offset map (key -> last offset); pass 2 recopies each
    segment keeping a record only if the map has no later offset for its key."""
    c = _compact_example()
    keys = sorted({k for _o, k, _v in c.before})
    colour = {k: KEY_COLOURS[i % len(KEY_COLOURS)] for i, k in enumerate(keys)}
    fig, ax = plt.subplots(figsize=(9.5, 3.4))
    w = 0.62

    def row(records: list[tuple[int, str, str | None]], y: float, label: str) -> dict[int, float]:
        ax.text(-0.2, y + 0.3, label, ha="right", va="center", fontsize=8)
        xs = {}
        for i, (offset, key, value) in enumerate(records):
            x = i * (w + 0.08)
            _box(ax, x, y, w, 0.6, f"{offset}\n{key}={value if value is not None else '∅'}", colour[key],
                 size=7, text_colour="white")
            xs[offset] = x
        return xs

    xs_before = row(c.before, 2.4, "dirty log\n(offset, key=value)")
    ax.text(-0.2, 1.45, "pass 1: offset map\n(key → last offset)", ha="right", va="center", fontsize=8)
    for i, key in enumerate(keys):
        x = i * 1.25
        _box(ax, x, 1.2, 1.1, 0.5, f"{key} → {c.offset_map[key]}", colour[key], size=8, text_colour="white")
    xs_after = row(c.after, 0.0, "pass 2: recopied\n(kept if latest)")
    for offset, x in xs_after.items():
        _arrow(ax, (xs_before[offset] + w / 2, 2.4), (x + w / 2, 0.6), "#888888")
    ax.text(len(c.before) * (w + 0.08) + 0.1, 2.7, f"{len(c.before)} records", fontsize=8, va="center")
    ax.text(len(c.before) * (w + 0.08) + 0.1, 0.3, f"{len(c.after)} records\n(the tombstone C=∅ stays for\n"
            "delete.retention.ms)", fontsize=7, va="center")
    ax.set_xlim(-2.6, len(c.before) * (w + 0.08) + 2.4)
    ax.set_ylim(-0.2, 3.2)
    ax.axis("off")
    ax.set_title("The cleaner's two passes on a real log (kafkalog's Cleaner, one round)", fontsize=9)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)


# -- the swap protocol -------------------------------------------------------------------------------

def swap_protocol(path: Path) -> None:
    """The ``.log`` files of a real cleaning round's replace, listed at each rename (Kafka:
    ``replaceSegments``); a crash at any step is resolved at the next open (``loadSegmentFiles``)."""
    steps = _compact_example().swap_steps
    rows = max(len(files) for _t, files in steps)
    fig, ax = plt.subplots(figsize=(2.0 * len(steps), 0.6 + 0.5 * rows))
    for i, (title, files) in enumerate(steps):
        x = i * 2.0
        top = 0.5 * rows
        ax.text(x + 0.9, top + 0.15, f"{i + 1}. {title}", ha="center", fontsize=7.5, weight="bold")
        for j, name in enumerate(files):
            suffix = name.split(".log")[-1]
            colour = {"": "#dde6f0", ".cleaned": "#fbe3c8", ".swap": "#f6c89a", ".deleted": "#e6e6e6"}[suffix]
            _box(ax, x, top - 0.45 - j * 0.5, 1.8, 0.4, name.replace("000000000000000", "…"), colour, size=6.5)
        if i < len(steps) - 1:
            _arrow(ax, (x + 1.82, top / 2), (x + 1.98, top / 2))
    ax.text(0, -0.3, "A crash while a .cleaned file exists: the next open deletes it.  After the rename to .swap "
            "the new segment is complete: the next open finishes the swap.", fontsize=7)
    ax.set_xlim(-0.1, 2.0 * len(steps))
    ax.set_ylim(-0.5, 0.5 * rows + 0.4)
    ax.axis("off")
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"segment-layout.png": segment_layout, "cleaner-passes.png": cleaner_passes,
           "swap-protocol.png": swap_protocol, **PICTURES}


def generate(out: Path = OUT) -> list[Path]:
    out.mkdir(exist_ok=True)
    made = []
    with quiet_kafkalog():
        for name, draw in FIGURES.items():
            draw(out / name)
            made.append(out / name)
    return made


def _on_builder_inited(app: Sphinx) -> None:
    generate()


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
