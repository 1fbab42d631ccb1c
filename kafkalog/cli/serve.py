"""``kafkalog serve``: a single-node Kafka-compatible broker over kafkalog's logs, until SIGTERM or Ctrl-C.

The broker (:mod:`kafkalog.broker`) takes Kafka's broker properties: ``--config name=value`` (repeatable) and
``--config-file server.properties`` (a Java properties file; ``--config`` wins over it), with ``--log-dirs`` and
``--listeners`` as shorthands for ``log.dirs`` and ``listeners``.  Once the port accepts connections the command
prints one line, ``kafkalog broker <node id> listening on <host:port> (cluster <id>)``, on stdout, so a script can
wait for it.  SIGTERM and SIGINT stop it cleanly: connections closed, logs flushed and checkpointed, and
``.kafka_cleanshutdown`` written, as Kafka's controlled shutdown leaves them; the exit status is then 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Iterator
from typing import Any

from ..config.config_def import ConfigError
from ..manager.meta_properties import read_properties
from .config_argument import config_pairs
from .console import EXIT_OK, Console

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve", help="run a Kafka-compatible broker over kafkalog's logs (PLAINTEXT, one node)",
        description="Serve Kafka's wire protocol over kafkalog's logs: a single-node broker that Kafka clients "
                    "(kafka-python, aiokafka, confluent-kafka, kcat, Kafka's own) use unchanged. Its data dirs are "
                    "real Kafka log dirs. Stops cleanly on SIGTERM or Ctrl-C.")
    parser.add_argument("--log-dirs", metavar="DIR[,DIR...]",
                        help="the data directories, created if absent (log.dirs; required unless a config gives it)")
    parser.add_argument("--listeners", metavar="PLAINTEXT://HOST:PORT",
                        help="where to listen (listeners; default PLAINTEXT://127.0.0.1:9092, port 0 picks one)")
    parser.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                        help="a broker property under Kafka's name, e.g. num.partitions=3; repeatable")
    parser.add_argument("--config-file", metavar="FILE",
                        help="a Java properties file of broker properties (server.properties)")
    parser.add_argument("--help-config", action="store_true",
                        help="list every broker property it takes (name, type, default, meaning) and exit")
    parser.set_defaults(run=run, input_paths=lambda a: [a.config_file] if a.config_file else [])
    return parser


def _properties(args: argparse.Namespace) -> dict[str, str]:
    props: dict[str, str] = {}
    if args.config_file:
        from pathlib import Path
        props.update(read_properties(Path(args.config_file)))
    props.update(config_pairs(args.config))
    if args.log_dirs:
        props["log.dirs"] = args.log_dirs
    if args.listeners:
        props["listeners"] = args.listeners
    if "log.dirs" not in props and "log.dir" not in props:
        raise ConfigError("kafkalog serve needs --log-dirs (or log.dirs in --config / --config-file)")
    return props


@contextlib.contextmanager
def _unimportable(name: str) -> Iterator[None]:
    """Imports of top-level package ``name`` fail with ImportError inside the block, unless it is already imported.

    kio, the broker's message types, imports hypothesis whenever it is installed (a development machine, a CI
    image) only to register test strategies for its types, which a serving process never draws from.  That import
    is about 0.25 s: most of the issue's 0.3 s budget from launch to the first produce.  kio treats the package
    as absent, as on a user's machine without it; the entry is removed afterwards, so the process can still import
    hypothesis later (a ``kafkalog serve`` run in a test process that has it already is left alone).
    """
    if name in sys.modules:
        yield
        return
    sys.modules[name] = None  # type: ignore[assignment]  # None in sys.modules: "import name" raises ImportError
    try:
        yield
    finally:
        if name in sys.modules and sys.modules[name] is None:
            del sys.modules[name]


def run(args: argparse.Namespace, console: Console) -> int:
    if args.help_config:
        from ..broker.config import property_help
        console.table(["property", "type", "default", "meaning"], property_help())
        return EXIT_OK
    props = _properties(args)
    try:
        with _unimportable("hypothesis"):
            from ..broker import Broker, BrokerConfig
    except ImportError as e:  # the broker extra (kio) is not installed
        raise ConfigError(f"kafkalog serve needs the broker extra: pip install 'kafkalog[broker]' ({e})") from None
    broker = Broker(BrokerConfig(props))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await broker.start()
        try:
            console.print(f"kafkalog broker {broker.node_id} listening on {broker.bootstrap_servers} "
                          f"(cluster {broker.cluster_id})")
            await stop.wait()
        finally:
            await broker.stop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    asyncio.run(main())
    console.print("kafkalog broker stopped")
    return EXIT_OK
