"""The ``kafkalog`` command (also ``python -m kafkalog``).

Subcommands, one module each, each a small function from parsed arguments to an exit status:

- ``dump``     Kafka's kafka-dump-log, line for line (:mod:`kafkalog.cli.dump`)
- ``verify``   read-only check of partition dirs or whole log.dirs (:mod:`kafkalog.cli.verify`)
- ``recover``  recover a partition dir in place, as a broker's open after a crash would
- ``clean``    compact a partition dir once, or until nothing is left to clean
- ``stats``    per-partition statistics as a table, JSON or CSV
- ``serve``    a Kafka-compatible broker over kafkalog's logs (:mod:`kafkalog.cli.serve`)
- ``demo``     a narrated tour of the log layer on a fresh directory
- ``bench``    run the benchmark suite and write the report (:mod:`kafkalog.cli.bench`)

Exit status, for every subcommand: 0 success; 1 the command ran and found problems (corruption,
mismatches, a failed check); 2 bad usage or input it could not read (a missing file, a directory that
is not a partition dir); 130 interrupted by Ctrl-C.  Data goes to stdout, diagnostics to stderr;
``-v`` turns on the library's logging (``-vv`` for debug); it and ``--no-progress`` may come before
the subcommand or anywhere after it.

Every path a command is given is checked before the command starts: a missing one is one line on
stderr in argparse's style (``kafkalog verify: error: DIR: no such file or directory``), exit 2 and
nothing on stdout.  Each subcommand names its paths with ``set_defaults(input_paths=...)``.  ``dump``,
``verify`` and ``stats`` also take URLs (``s3://bucket/logs``), with ``--storage-option NAME=VALUE``
(:mod:`kafkalog.urls`); a URL is checked by the command, through its filesystem.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from .. import __version__, implementation
from ..errors import KafkaLogError
from ..urls.location import is_url
from .console import EXIT_FOUND, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, Console

#: The subcommand modules, in the order ``--help`` lists them; each has ``add_parser`` and ``run``.
SUBCOMMANDS = ("dump", "verify", "recover", "clean", "stats", "serve", "demo", "bench")

__all__ = ["SUBCOMMANDS", "EXIT_FOUND", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]



def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every subcommand, or with ``only`` that one alone (what :func:`main` builds when
    the command line names it: each subcommand module imports what it runs, and a command that starts a server,
    ``serve``, should not wait for the imports of all the others)."""
    parser = argparse.ArgumentParser(
        prog="kafkalog",
        description="Read, check, recover and compact Kafka log directories (a port of Kafka's log layer).",
        epilog="Exit status: 0 success, 1 problems found, 2 bad usage or unreadable input, 130 interrupted.")
    parser.add_argument("--version", action="version", version=f"kafkalog {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log what the library does to stderr (-vv for debug)")
    parser.add_argument("--no-progress", action="store_true", help="never draw progress bars")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        if only is None or name == only:
            importlib.import_module(f"{__name__}.{name}").add_parser(subparsers)
    for subparser in subparsers.choices.values():
        _add_global_flags(subparser)
    return parser


def _add_global_flags(subparser: argparse.ArgumentParser) -> None:
    """The top-level flags again, so they work after the subcommand too (``kafkalog verify DIR -v``).

    argparse copies a subparser's values over the top level's, so these have their own names, and no
    default (``SUPPRESS``), and :func:`main` adds them to the top level's: ``kafkalog -v verify DIR -v``
    is ``-vv``.
    """
    group = subparser.add_argument_group("global options (also accepted before the command)")
    group.add_argument("-v", "--verbose", dest="verbose_after", action="count", default=argparse.SUPPRESS,
                       help="log what the library does to stderr (-vv for debug)")
    group.add_argument("--no-progress", dest="no_progress_after", action="store_true", default=argparse.SUPPRESS,
                       help="never draw progress bars")


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    # The top-level flags take no value, so the first word that is not a flag is the subcommand.
    chosen = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser(chosen if chosen in SUBCOMMANDS else None)
    try:
        args = parser.parse_args(words)
    except SystemExit as e:  # argparse's own exit: --help, --version, a usage error
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    args.verbose += getattr(args, "verbose_after", 0)
    args.no_progress = args.no_progress or getattr(args, "no_progress_after", False)
    err = stderr if stderr is not None else sys.stderr
    # A URL is looked at by the command itself, through its filesystem (kafkalog.urls).
    missing = [p for p in args.input_paths(args) if not is_url(p) and not os.path.exists(p)] \
        if hasattr(args, "input_paths") else []
    if missing:
        # Checked before anything runs, so a typo costs one line (argparse's style) and no half-printed table.
        for path in missing:
            err.write(f"kafkalog {args.command}: error: {path}: no such file or directory\n")
        return EXIT_USAGE
    if not args.verbose:
        # What the library logs, the commands report themselves; without -v it stays quiet.
        logging.getLogger("kafkalog").addHandler(logging.NullHandler())
    else:
        handler = logging.StreamHandler(err)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger("kafkalog")
        root.addHandler(handler)
        root.setLevel(logging.DEBUG if args.verbose > 1 else logging.INFO)
        root.info("kafkalog %s, %s kernels", __version__, implementation())
    console = Console(stdout, stderr, progress=False if args.no_progress else None,
                      streaming_output=getattr(args, "streaming_output", False))
    try:
        return int(args.run(args, console))
    except KeyboardInterrupt:
        console.error("kafkalog: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (``kafkalog dump ... | head``): not an error of ours.
        _silence_stdout()
        return EXIT_OK
    except (KafkaLogError, OSError) as e:
        console.error(f"kafkalog {args.command}: {e}")
        return EXIT_USAGE


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def entry_point() -> None:
    """The console script."""
    sys.exit(main())
