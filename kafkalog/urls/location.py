"""Where kafkalog reads from: a local path, or a URL of a filesystem fsspec knows, built lazily from options.

A reader is given either a local path (``/data/kafka-logs``, ``file:///data/kafka-logs``), which keeps the
local fast path (:class:`~kafkalog.file_message_set.FileMessageSet` over the file itself), or a URL whose
scheme names an fsspec protocol (``s3://bucket/prefix``, ``gs://``, ``abfs://``, ``hdfs://``, ``memory://``),
read through ranged reads (``fs.cat_file(path, start, end)``) and listings (``fs.ls``), never mapped.

Options (``endpoint_url``, ``key``, ``secret``, any name the protocol's filesystem class takes) go to that
class as keyword arguments; without them fsspec and the class read the environment as they always do
(``AWS_ACCESS_KEY_ID``, ``~/.aws``, ``GOOGLE_APPLICATION_CREDENTIALS``, ...).  From the command line or from
Spark options every value is text: one that reads as JSON (``true``, ``5``, ``{"region_name": "x"}``) is
passed as that value, any other as the text itself; credentials, names and endpoints (:data:`TEXT_OPTIONS`) are
always the text given, and JSON's quotes make any other value text (``'"5"'``).

A :class:`Storage` builds its filesystem at first use, in the process that uses it, and pickles without it:
a Spark task rebuilds it in the worker (fsspec's async filesystems, s3fs among them, must not be used across
a fork; fsspec's instance cache is per process).  kafkalog's, no Kafka counterpart.

Errors: a URL that is not one, or names a protocol fsspec does not know, or one whose package is missing, is a
:class:`StorageURLError` that says which extra to install; an option the filesystem class does not take, or
refuses, is a :class:`StorageOptionError`; a missing object is a :class:`StorageNotFoundError`.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..errors import KafkaStorageError, StorageNotFoundError, StorageOptionError, StorageURLError

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = [
    "EXTRAS",
    "Storage",
    "StorageLocation",
    "is_url",
    "locate",
    "parse_storage_options",
]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

#: The extra of kafkalog that installs each protocol's filesystem package.
EXTRAS: dict[str, str] = {
    "s3": "storage", "s3a": "storage",
    "gs": "gcs", "gcs": "gcs",
    "abfs": "azure", "abfss": "azure", "az": "azure", "adl": "azure",
    "hdfs": "hdfs", "viewfs": "hdfs",
    "memory": "storage",
}

# Keyword arguments every fsspec filesystem takes (AbstractFileSystem and AsyncFileSystem read them from
# **kwargs, so the signatures do not show them).
_COMMON_OPTIONS = frozenset({"use_listings_cache", "listings_expiry_time", "max_paths", "skip_instance_cache",
                             "asynchronous", "loop", "batch_size"})


def is_url(text: str | os.PathLike[str]) -> bool:
    """Whether ``text`` is a URL (``scheme://...``) rather than a local path."""
    return isinstance(text, str) and _SCHEME.match(text) is not None


def parse_storage_options(pairs: Iterable[str]) -> dict[str, Any]:
    """``NAME=VALUE`` texts (``--storage-option``) as options; a value that reads as JSON is that value.

    Raises:
        StorageOptionError: a text without ``=``, or with an empty or malformed name.
    """
    options: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise StorageOptionError(f"storage option {pair!r} is not NAME=VALUE (a name such as endpoint_url, "
                                     "key, secret, then '=' and the value)")
        options[name] = option_value(value, name)
    return options


#: Options that are always text, whatever they look like (a secret of digits is no number): credentials,
#: names and endpoints of the filesystems kafkalog names extras for.
TEXT_OPTIONS = frozenset({
    "key", "secret", "token", "username", "password", "endpoint_url", "profile", "region_name", "account_name",
    "account_key", "sas_token", "connection_string", "client_id", "client_secret", "tenant_id", "project",
    "host", "user", "kerb_ticket",
})


def option_value(text: Any, name: str = "") -> Any:
    """An option given as text: the JSON value it reads as (``true``, ``5``, ``{...}``, ``"quoted text"``),
    else the text; an option of :data:`TEXT_OPTIONS` is the text as given (unless quoted as JSON)."""
    if not isinstance(text, str):
        return text
    if name in TEXT_OPTIONS and not text.startswith('"'):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _filesystem_class(protocol: str, url: str) -> type[AbstractFileSystem]:
    extra = EXTRAS.get(protocol, "storage")
    try:
        import fsspec
        from fsspec.registry import known_implementations, registry
    except ImportError:
        raise StorageURLError(f"{url}: reading URLs needs fsspec: pip install 'kafkalog[{extra}]'") from None
    if protocol not in known_implementations and protocol not in registry:
        raise StorageURLError(
            f"{url}: unknown protocol {protocol!r}: kafkalog reads local paths and s3://, gs://, abfs://, hdfs://, "
            "file:// and memory:// URLs (and any other protocol fsspec knows)")
    try:
        cls: type[AbstractFileSystem] = fsspec.get_filesystem_class(protocol)
    except ImportError as e:
        raise StorageURLError(f"{url}: the {protocol}:// filesystem is not installed ({e}): "
                              f"pip install 'kafkalog[{extra}]'") from None
    return cls


def _accepted_options(cls: type[Any]) -> set[str] | None:
    """The keyword arguments the constructors of ``cls`` name, or ``None`` when one takes any name (a
    ``**kwargs`` that no base class ends up naming)."""
    names = set(_COMMON_OPTIONS)
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            params = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            return None
        names.update(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    names.discard("self")
    return names


@dataclass(frozen=True)
class Storage:
    """A protocol and its options; the fsspec filesystem is built at first use and not pickled."""

    protocol: str
    options: Mapping[str, Any] = field(default_factory=dict)
    # (pid, filesystem) once built: a process that forked after the build builds its own.
    _fs: list[tuple[int, AbstractFileSystem]] = field(default_factory=list, compare=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    def __hash__(self) -> int:
        # The options may hold dicts (client_kwargs): hash their JSON form.
        return hash((self.protocol, json.dumps(dict(self.options), sort_keys=True, default=str)))

    def __getstate__(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "options": dict(self.options)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "protocol", state["protocol"])
        object.__setattr__(self, "options", state["options"])
        object.__setattr__(self, "_fs", [])
        object.__setattr__(self, "_lock", threading.Lock())

    def at(self, url: str) -> StorageLocation:
        """The place ``url`` names, in this storage (its protocol must be this storage's)."""
        protocol, path = _split_url(url)
        if protocol != self.protocol:
            raise StorageURLError(f"{url} is not a {self.protocol}:// URL")
        return StorageLocation(self, path)

    def check(self, url: str) -> type[AbstractFileSystem]:
        """The filesystem class, with the options checked against it (nothing is built or contacted)."""
        cls = _filesystem_class(self.protocol, url)
        accepted = _accepted_options(cls)
        unknown = sorted(set(self.options) - accepted) if accepted is not None else []
        if unknown:
            raise StorageOptionError(
                f"{url}: the {self.protocol}:// filesystem ({cls.__module__}.{cls.__qualname__}) takes no option "
                f"{', '.join(unknown)}; it takes {', '.join(sorted(accepted or ()))}")
        return cls

    @property
    def fs(self) -> AbstractFileSystem:
        """The filesystem, built now if it is not yet (once per process)."""
        with self._lock:
            if self._fs and self._fs[0][0] == os.getpid():
                return self._fs[0][1]
            cls = self.check(f"{self.protocol}://")
            try:
                fs = cls(**dict(self.options))
            except (TypeError, ValueError) as e:
                raise StorageOptionError(f"the {self.protocol}:// filesystem refuses its options "
                                         f"{sorted(self.options)}: {e}") from e
            self._fs[:] = [(os.getpid(), fs)]
            return fs


@dataclass(frozen=True)
class StorageLocation:
    """A file or directory in a filesystem reached by URL: ``storage`` and the path fsspec names it by
    (``bucket/prefix/topic-0/00000000000000000000.log`` for ``s3://bucket/prefix/...``)."""

    storage: Storage
    path: str

    @property
    def url(self) -> str:
        return f"{self.storage.protocol}://{self.path}"

    def __str__(self) -> str:
        return self.url

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> StorageLocation:
        head = self.path.rstrip("/").rsplit("/", 1)
        return StorageLocation(self.storage, head[0] if len(head) == 2 else "")

    def __truediv__(self, name: str) -> StorageLocation:
        return StorageLocation(self.storage, f"{self.path.rstrip('/')}/{name}")

    @property
    def fs(self) -> AbstractFileSystem:
        return self.storage.fs

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except FileNotFoundError:
            raise StorageNotFoundError(f"{self.url}: no such object or directory") from None
        except (StorageOptionError, StorageURLError, KafkaStorageError):
            raise
        except OSError as e:
            raise KafkaStorageError(f"{self.url}: cannot {what}: {e}") from e
        except Exception as e:
            # A filesystem's client raises its own errors (botocore's, aiohttp's, ...): name them, as one
            # kafkalog error, rather than let them escape as a crash.
            raise KafkaStorageError(f"{self.url}: cannot {what}: {type(e).__name__}: {e}") from e

    def entries(self) -> list[tuple[str, str, int]]:
        """The directory's entries as ``(name, "file" | "directory", size)``, sorted by name.

        Raises:
            StorageNotFoundError: nothing is there.
        """
        listing = self._call("list it", lambda: self.fs.ls(self.path, detail=True))
        base = self.path.rstrip("/")
        found = []
        for info in listing:
            full = str(info["name"]).rstrip("/")
            if full == base:
                if info.get("type") != "directory":
                    # ls of a file lists the file itself
                    raise StorageNotFoundError(f"{self.url} is a file, not a directory")
                continue
            found.append((full.rsplit("/", 1)[-1], str(info.get("type", "file")), int(info.get("size") or 0)))
        return sorted(found)

    def info(self) -> dict[str, Any]:
        """fsspec's ``info``: ``type`` and ``size`` at least.

        Raises:
            StorageNotFoundError: nothing is there.
        """
        found: dict[str, Any] = self._call("stat it", self.fs.info, self.path)
        return found

    def exists(self) -> bool:
        try:
            self.info()
        except StorageNotFoundError:
            return False
        return True

    def is_dir(self) -> bool:
        try:
            return self.info().get("type") == "directory"
        except StorageNotFoundError:
            return False

    def size(self) -> int:
        return int(self.info().get("size") or 0)

    def glob(self) -> list[StorageLocation]:
        """The places whose paths match this location's path as a glob (``*``, ``?``, ``[...]``, ``**``:
        fsspec's ``fs.glob``), sorted; none when nothing matches."""
        matches = self._call("match it as a glob", lambda: self.fs.glob(self.path))
        return [StorageLocation(self.storage, str(m).rstrip("/")) for m in sorted(matches)]

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` with one ranged read; fewer only where the object ends."""
        if end <= start:
            return b""
        # By keyword: s3fs's cat_file takes a version id second, so a positional start would be read as one.
        data: bytes = self._call(f"read bytes {start} to {end}",
                                 lambda: self.fs.cat_file(self.path, start=start, end=end))
        return data


def _split_url(text: str) -> tuple[str, str]:
    """The protocol of a URL and the path its filesystem names the place by (a local path for ``file://``).
    After the scheme, a URL other than ``file://`` is the path as it is: ``?``, ``[`` and ``#`` are a glob's
    or a key's characters there, as fsspec takes them, not a query, a host or a fragment."""
    scheme, rest = text.split("://", 1)
    protocol = scheme.lower()
    if protocol in ("file", "local"):
        host, _, path = rest.partition("/")
        if host not in ("", "localhost"):
            raise StorageURLError(f"{text}: a file:// URL names a local path (file:///path), not a host")
        return protocol, unquote("/" + path)
    if protocol == "memory":
        # fsspec's memory filesystem roots every path at "/".
        return protocol, "/" + rest.strip("/")
    path = rest.rstrip("/")
    if not path.strip("/"):
        raise StorageURLError(f"{text}: the URL names no bucket or path")
    return protocol, path


def locate(arg: str | os.PathLike[str], options: Mapping[str, Any] | None = None) -> Path | StorageLocation:
    """A local :class:`~pathlib.Path` for a path or a ``file://`` URL (the local fast path), else the
    :class:`StorageLocation` of the URL, its options checked against its filesystem class.

    Raises:
        StorageURLError: not a URL kafkalog can read (unknown protocol, missing package, no path).
        StorageOptionError: options given with a local path, or options the filesystem does not take.
    """
    if not is_url(arg):
        if options:
            raise StorageOptionError(f"{arg} is a local path: storage options ({', '.join(sorted(options))}) are "
                                     "for URLs (s3://, gs://, abfs://, hdfs://, memory://)")
        return Path(arg)
    text = str(arg)
    protocol, path = _split_url(text)
    if protocol in ("file", "local"):
        if options:
            raise StorageOptionError(f"{text} is a local path: storage options are for remote URLs")
        return Path(path)
    storage = Storage(protocol, {k: option_value(v, k) for k, v in (options or {}).items()})
    storage.check(text)
    return StorageLocation(storage, path)
