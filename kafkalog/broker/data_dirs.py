"""The broker's data directories: created on first start, and each given Kafka's ``meta.properties``.

A KRaft broker's data directory is *formatted* before its first start (``kafka-storage.sh format``), which writes
``meta.properties`` (``MetaProperties``, ``metadata/.../properties/``, 3.8.0)::

    #
    #<date>
    node.id=1
    directory.id=fP5jC5Yl6yjlQRf7Vby5_Q
    version=1
    cluster.id=Vs1rZuBdQ2mnbYvBjLsNoQ

``kafkalog serve`` formats a directory that has no such file (a new cluster id for the first, the same for the
others, a new directory id for each), and on every start checks what Kafka's ``MetaPropertiesEnsemble.verify``
checks: one cluster id across the directories, and the configured ``node.id`` (Kafka: "Stored node id 2 doesn't
match previous node id 1").  So a kafkalog data directory is one Kafka's tools and Kafka's broker accept.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from ..config.config_def import ConfigError
from ..fsutil import fsync_dir
from ..manager.meta_properties import META_PROPERTIES_FILE, read_properties
from .topic_ids import new_id, topic_id_text

__all__ = ["prepare_data_dirs"]


def _new_id() -> str:
    return topic_id_text(new_id())


def _write(path: Path, props: dict[str, str]) -> None:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
    body = "#\n#" + stamp + "\n" + "".join(f"{k}={v}\n" for k, v in props.items())
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, body.encode("latin-1"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def prepare_data_dirs(log_dirs: list[str], node_id: int) -> str:
    """Create and format the directories that need it, check them all, and return the cluster id.

    Raises:
        ConfigError: the directories belong to different clusters, or to another node id.
    """
    found: dict[Path, dict[str, str]] = {}
    for d in log_dirs:
        path = Path(d)
        path.mkdir(parents=True, exist_ok=True)
        meta = path / META_PROPERTIES_FILE
        if meta.exists():
            found[path] = read_properties(meta)
    clusters = {c for props in found.values() if (c := props.get("cluster.id")) is not None}
    if len(clusters) > 1:
        raise ConfigError(f"The data directories belong to different clusters: {sorted(c for c in clusters if c)}",
                          name="log.dirs")
    for path, props in found.items():
        stored = props.get("node.id", props.get("broker.id"))
        if stored is not None and stored != str(node_id):
            raise ConfigError(f"Stored node id {stored} doesn't match previous node id {node_id} in "
                              f"{path / META_PROPERTIES_FILE}. If you moved your data, make sure your configured "
                              f"node id matches.", name="node.id")
    cluster_id = clusters.pop() if clusters else _new_id()
    for d in log_dirs:
        path = Path(d)
        if path not in found:
            _write(path / META_PROPERTIES_FILE, {"node.id": str(node_id), "directory.id": _new_id(), "version": "1",
                                                 "cluster.id": cluster_id})
    return cluster_id
