"""A log dir's ``meta.properties``: the broker's identity file, read for the directory's id.

Port of what ``LogManager.loadDirectoryIds`` (``core/src/main/scala/kafka/log/LogManager.scala``, Kafka
3.8.0) reads: ``PropertiesUtils.readPropertiesFile`` and ``MetaProperties.directoryId`` (``metadata``,
``org.apache.kafka.metadata.properties``), ``Uuid.fromString`` (clients) and the two reserved ids of
``DirectoryId`` (server-common).  Kafka 0.10.1.1 has no directory ids: they came with JBOD under KRaft (3.7).

The file is a Java ``.properties`` file the broker writes in every log dir when it formats it, e.g.::

    version=1
    node.id=1
    cluster.id=Vs1rZuBdQ2mnbYvBjLsNoQ
    directory.id=fP5jC5Yl6yjlQRf7Vby5_Q

kafkalog reads it and never writes it.  A directory id is a UUID as Kafka prints one: its 16 bytes in
URL-safe base64 without padding, 22 characters.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path

from ..errors import KafkaStorageError
from ..filenames import META_PROPERTIES_FILE
from ..fsutil import read_regular

__all__ = ["DIRECTORY_ID_LOST", "DIRECTORY_ID_PROP", "DIRECTORY_ID_UNASSIGNED", "META_PROPERTIES_FILE",
           "parse_uuid", "read_directory_id", "read_properties"]

#: The property of ``meta.properties`` holding the directory's id (Kafka: ``MetaProperties.DIRECTORY_ID_PROP``).
DIRECTORY_ID_PROP = "directory.id"
#: Kafka's ``DirectoryId.UNASSIGNED`` (``new Uuid(0, 0)``): a replica not yet placed in a directory.
DIRECTORY_ID_UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAA"
#: Kafka's ``DirectoryId.LOST`` (``new Uuid(0, 1)``): a replica whose directory is offline or unknown.
DIRECTORY_ID_LOST = "AAAAAAAAAAAAAAAAAAAAAQ"


def parse_uuid(text: str) -> str:
    """Kafka's ``Uuid.fromString``: 16 bytes in URL-safe base64 without padding (22 characters)."""
    if len(text) > 22:
        raise ValueError(f"Input string with prefix `{text[:22]}` is too long to be decoded as a base64 UUID")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"Input string `{text}` decoded as {e}") from None
    if len(raw) != 16:
        raise ValueError(f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the "
                         "expected 16 bytes of a base64-encoded UUID")
    return text


def read_properties(path: Path) -> dict[str, str]:
    """A Java ``.properties`` file of ``key=value`` lines (``#``/``!`` comments; ``:`` separators too), as
    ``PropertiesUtils.readPropertiesFile`` reads the broker's ``meta.properties``."""
    props: dict[str, str] = {}
    for raw in read_regular(path).decode("latin-1").splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            props[line] = ""
        else:
            props[line[:cut].strip()] = line[cut + 1:].strip()
    return props


def read_directory_id(log_dir: str | os.PathLike[str]) -> str | None:
    """The ``directory.id`` of ``log_dir``'s ``meta.properties``, or ``None`` when the file has none (the
    body of Kafka's ``loadDirectoryIds`` loop, for one directory).

    Raises:
        FileNotFoundError: the directory has no ``meta.properties``.
        OSError: the file cannot be read.
        KafkaStorageError: a ``directory.id`` that is not a base64 UUID.
    """
    path = Path(log_dir) / META_PROPERTIES_FILE
    directory_id = read_properties(path).get(DIRECTORY_ID_PROP)
    if directory_id is None:
        return None
    try:
        return parse_uuid(directory_id)
    except ValueError as e:
        raise KafkaStorageError(f"Unable to read {DIRECTORY_ID_PROP} as a Uuid: {e} ({path})") from e
