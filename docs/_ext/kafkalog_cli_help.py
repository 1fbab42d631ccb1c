"""The ``kafkalog-cli-help`` directive: a command's ``--help``, as the installed ``kafkalog`` prints it.

``.. kafkalog-cli-help::`` gives the top-level help, ``.. kafkalog-cli-help:: dump`` a subcommand's.
The text comes from the argparse parser itself (:func:`kafkalog.cli.build_parser`) at build time, so the
reference cannot disagree with the command, at a fixed width of :data:`WIDTH` columns: what the text column
of the page holds on a wide screen without scrolling (on a narrow one, ``kafkalog.css`` wraps the lines).
"""

from __future__ import annotations

import argparse
import os
from typing import Any
from unittest import mock

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from kafkalog.cli import build_parser

#: The width the help is formatted to (argparse leaves two columns of the terminal's free).
WIDTH = 78


def help_text(command: str | None) -> str:
    with mock.patch.dict(os.environ, {"COLUMNS": str(WIDTH + 2)}):
        parser = build_parser()
        if command is None:
            return parser.format_help()
        for action in parser._actions:  # argparse keeps its subparsers here and nowhere public
            if isinstance(action, argparse._SubParsersAction):
                return str(action.choices[command].format_help())
    raise ValueError(f"no kafkalog command {command!r}")


class CliHelpDirective(SphinxDirective):
    optional_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        command = self.arguments[0] if self.arguments else None
        try:
            text = help_text(command)
        except (KeyError, ValueError) as e:
            raise self.error(f"kafkalog-cli-help: {e}") from None
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        block["classes"].append("kafkalog-cli-help")
        return [block]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("kafkalog-cli-help", CliHelpDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
