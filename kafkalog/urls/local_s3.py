"""An S3-compatible server on 127.0.0.1 for the storage tests, the benchmark of reading through S3 and
``python -m kafkalog.spark.demo --cluster``: moto's ``ThreadedMotoServer`` (``moto[server]``, in the ``test``
and ``bench`` extras), started on a free port in this process and stopped again, each within a bounded time.
In the package, so that an installed ``kafkalog bench`` and the demo find it.

Nothing reaches past this machine: the server listens on 127.0.0.1 only, the clients are given its endpoint
and fixed credentials (so botocore never looks for others, nor asks an instance-metadata service).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: How long the server may take to start or to stop.
SERVER_TIMEOUT = 20.0

# Fixed, fake credentials and no metadata service: botocore must neither search for nor fetch others.
_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "kafkalog-test",
    "AWS_SECRET_ACCESS_KEY": "kafkalog-test",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    @property
    def options(self) -> dict[str, Any]:
        """The storage options that reach this server (``--storage-option`` / ``storage.<name>``)."""
        return {"endpoint_url": self.endpoint, "key": "kafkalog-test", "secret": "kafkalog-test"}

    def cli_options(self) -> list[str]:
        return [arg for name, value in self.options.items() for arg in ("--storage-option", f"{name}={value}")]

    def filesystem(self) -> Any:
        import s3fs

        return s3fs.S3FileSystem(**self.options, skip_instance_cache=True)

    def upload(self, local: Path, bucket_path: str) -> str:
        """Copy the directory ``local`` to ``bucket_path`` (``bucket/prefix``), file by file; returns its URL."""
        fs = self.filesystem()
        for root, _dirs, files in os.walk(local):
            for name in files:
                source = Path(root) / name
                fs.put_file(str(source), f"{bucket_path}/{source.relative_to(local).as_posix()}")
        return f"s3://{bucket_path}"


def _run_bounded(target: Any, what: str) -> None:
    done = threading.Thread(target=target, daemon=True, name=f"moto-{what}")
    done.start()
    done.join(SERVER_TIMEOUT)
    if done.is_alive():
        raise TimeoutError(f"the S3 server did not {what} within {SERVER_TIMEOUT} s")


@contextmanager
def s3_server(buckets: tuple[str, ...] = ()) -> Iterator[S3Server]:
    """A running server with ``buckets`` created; stopped on exit."""
    from moto.server import ThreadedMotoServer

    saved = {name: os.environ.get(name) for name in _ENVIRONMENT}
    os.environ.update(_ENVIRONMENT)
    # The server's HTTP layer (werkzeug) logs every request to stderr, verbose=False or not.
    requests_log = logging.getLogger("werkzeug")
    level = requests_log.level
    requests_log.setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    try:
        _run_bounded(server.start, "start")
        host, port = server.get_host_and_port()
        running = S3Server(f"http://{host}:{port}")
        fs = running.filesystem()
        for bucket in buckets:
            fs.mkdir(bucket)
        yield running
    finally:
        _run_bounded(server.stop, "stop")
        requests_log.setLevel(level)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
