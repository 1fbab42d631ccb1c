"""What a request handler is given: the request's header, who sent it, and the broker it runs in.

Handlers are ``async def handle(ctx: RequestContext, request) -> response | None`` (``None``: no response, as for a
produce with ``acks=0``).  They see the broker through :class:`BrokerState`, the part of it they use, so that no
handler module imports the server.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING, Any, Protocol

from .kio_values import build
from .protocol import response_class

if TYPE_CHECKING:

    from .config import BrokerConfig
    from .partitions import PartitionRegistry
    from .protocol import RequestHeader

__all__ = ["BrokerState", "ProducerIdSource", "RequestContext"]


class ProducerIdSource(Protocol):
    """Where new producer ids come from (:class:`~kafkalog.broker.producer_ids.ProducerIdManager`)."""

    def generate(self) -> int: ...


class BrokerState(Protocol):
    """The broker as its handlers see it."""

    config: BrokerConfig
    partitions: PartitionRegistry
    node_id: int
    cluster_id: str

    @property
    def producer_ids(self) -> ProducerIdSource: ...

    @property
    def advertised_host(self) -> str: ...

    @property
    def advertised_port(self) -> int: ...

    async def wait_for_data(self, timeout_s: float) -> None:
        """Return when any partition gets new records, or after ``timeout_s``."""

    def supported_versions(self) -> dict[int, tuple[int, int]]:
        """API key -> (lowest, highest) version answered."""


@dataclasses.dataclass(frozen=True, slots=True)
class RequestContext:
    """One request's circumstances (Kafka: ``RequestContext``)."""

    header: RequestHeader
    client_host: str
    client_port: int
    broker: BrokerState

    @property
    def api_version(self) -> int:
        return self.header.api_version

    def response(self, **fields: Any) -> Any:
        """The response of this request's API and version, from ``fields``
        (:func:`~kafkalog.broker.kio_values.build`)."""
        return build(response_class(self.header.api_key, self.header.api_version), **fields)

    def response_type(self, name: str) -> Any:
        """A nested type of this request's response module (``"MetadataResponseTopic"``, ...), or ``None`` when
        this version has none of that name (an older version without the field that holds it)."""
        cls = response_class(self.header.api_key, self.header.api_version)
        return getattr(sys.modules[cls.__module__], name, None)

