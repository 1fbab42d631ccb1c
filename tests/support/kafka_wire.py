"""A raw Kafka protocol client for the broker tests: frames written with kio, answers read with kio.

Real clients hide what the broker sends; these tests need the bytes: an ApiVersions answer at v0 to an unknown
version, a connection closed after a bad frame, a request answered in order.  Requests are kio entities written with
kio's writer; responses are read with kio's reader (the broker's answers are trusted input here).
"""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.index import load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer

__all__ = ["WireClient"]


class WireClient:
    """One connection to a broker, sending kio requests and reading kio responses."""

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def frame(self, request: Any, *, api_version: int | None = None, client_id: str | None = "wire-test") -> bytes:
        """The whole frame of ``request`` (its API key and version from the entity unless ``api_version``)."""
        self._correlation += 1
        version = request.__version__ if api_version is None else api_version
        header_cls = RequestHeaderV2 if type(request).__flexible__ else RequestHeaderV1
        header = header_cls(request_api_key=request.__api_key__, request_api_version=version,
                            correlation_id=self._correlation, client_id=client_id)
        out = io.BytesIO()
        entity_writer(header_cls)(out, header)
        entity_writer(type(request))(out, request)
        body = out.getvalue()
        return struct.pack(">i", len(body)) + body

    def read_frame(self) -> bytes:
        """The next response frame's bytes (after its size); raises ConnectionError when the broker closed."""
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def request(self, request: Any, *, api_version: int | None = None) -> tuple[int, Any]:
        """Send ``request`` and read its answer: (correlation id, response entity)."""
        self.send_raw(self.frame(request, api_version=api_version))
        return self.read_response(request.__api_key__, request.__version__ if api_version is None else api_version)

    def read_response(self, api_key: int, version: int) -> tuple[int, Any]:
        data = self.read_frame()
        correlation = struct.unpack_from(">i", data, 0)[0]
        cls = load_response_schema(api_key, version)
        pos = 4
        if cls.__flexible__ and api_key != 18:
            pos += 1  # the response header's empty tagged fields
        response, _ = entity_reader(cls)(data, pos)
        return correlation, response

    def closed_by_peer(self, timeout: float = 10.0) -> bool:
        """Whether the broker closes the connection (reads until EOF or ``timeout``)."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        return True
