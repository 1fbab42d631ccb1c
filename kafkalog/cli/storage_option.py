"""``--storage-option NAME=VALUE``: the options of the filesystem a URL argument is read through
(:mod:`kafkalog.urls`), for the read-only commands (``dump``, ``verify``, ``stats``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import StorageOptionError
from ..urls.location import StorageLocation, locate, parse_storage_options

__all__ = ["add_storage_option_argument", "locate_argument", "storage_options"]


def _pair(text: str) -> str:
    try:
        parse_storage_options([text])
    except StorageOptionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def add_storage_option_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--storage-option", dest="storage_options", action="append", default=[], type=_pair, metavar="NAME=VALUE",
        help="an option of the filesystem URLs are read through (s3://, gs://, abfs://, hdfs://, memory://), e.g. "
             "endpoint_url=http://127.0.0.1:9000, key=..., secret=..., anon=true (a value that reads as JSON is "
             "that value, but credentials and endpoints are always text); repeatable. Without them the "
             "environment is read, as fsspec does")


def storage_options(args: argparse.Namespace) -> dict[str, Any]:
    return parse_storage_options(getattr(args, "storage_options", []))


def locate_argument(arg: str, args: argparse.Namespace) -> Path | StorageLocation:
    """A path argument as a local path or a URL with the command's storage options.

    Raises:
        StorageURLError, StorageOptionError: see :func:`kafkalog.urls.location.locate`.
    """
    options = storage_options(args)
    return locate(arg, options or None)
