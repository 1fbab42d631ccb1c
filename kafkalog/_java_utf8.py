"""Bytes to text as Java's ``new String(bytes, UTF_8)`` makes it: malformed input replaced Java's way.

Kafka builds every string it reads from a log with Java's UTF-8 decoder: header keys
(``DefaultRecord.readHeaders`` through ``Utils.utf8``), the strings of its messages (``ByteBufferAccessor``), the
tools' ``StringDecoder`` (``kafka-dump-log``'s keys and payloads).  Valid UTF-8 reads the same everywhere; on
malformed input Java replaces what it finds with U+FFFD by rules of its own (JDK 17,
``java.lang.String.decodeUTF8_UTF16``, unchanged through JDK 25), which are not Python's ``"replace"``
("maximal subparts", one U+FFFD for each).  The two differ on, for instance:

- an encoded surrogate, ``ED A0 80``: Java decodes the three bytes, finds a surrogate and writes one U+FFFD;
  Python stops at ``A0`` (no surrogates in UTF-8) and writes three;
- ``ED A0`` cut short at the end: Java writes one U+FFFD and stops; Python two.

This module registers a codec error handler, :data:`JAVA_UTF8` (``"kafkalog.java-utf8"``), that resumes where
Java would: ``data.decode("utf-8", JAVA_UTF8)`` is Java's string, and costs nothing more than a strict decode
when the bytes are valid (the handler runs only at an error).  Both kernel twins and every reader of Kafka's
strings decode with it, so a header key, a decoded payload and a re-encoded size are what Kafka's are.

Why resuming at Java's position is enough: Java and Python agree on which sequences are valid UTF-8 (shortest
form, no surrogates, at most U+10FFFF), so between two errors both decode the same characters; at an error
Python reports the byte where the malformed sequence starts, which is where Java's decoder stands too, and
the handler takes Java's step from there: one U+FFFD, and the number of bytes Java consumes (all the rest when
Java's decoder stops, at a sequence cut short by the end of the input).
"""

from __future__ import annotations

import codecs

__all__ = ["JAVA_UTF8", "java_utf8"]

JAVA_UTF8 = "kafkalog.java-utf8"
_REPLACEMENT = "\ufffd"


def _is_continuation(b: int) -> bool:
    return b & 0xC0 == 0x80


def _malformed3(b1: int, b2: int) -> int:
    """Java's ``malformed3``: the bytes a malformed three-byte sequence takes (1, or 2 when its second byte
    belongs to it)."""
    return 1 if (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _is_continuation(b2) else 2


def _malformed4(b1: int, b2: int, b3: int) -> int:
    """Java's ``malformed4``: the bytes a malformed four-byte sequence takes (1 to 3)."""
    if b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80) \
            or not _is_continuation(b2):
        return 1
    return 2 if not _is_continuation(b3) else 3


def _java_step(data: bytes | bytearray | memoryview, start: int) -> int:
    """Where Java's decoder resumes after the malformed sequence at ``data[start]`` (one U+FFFD written);
    ``len(data)`` where it stops decoding."""
    end = len(data)
    b1 = data[start]
    sp = start + 1
    if b1 >> 5 == 0b110 and b1 & 0x1E:  # a two-byte lead (C2..DF)
        # The second byte is no continuation (resume at it), or there is none (stop).
        return sp if sp < end else end
    if b1 >> 4 == 0b1110:  # a three-byte lead
        if sp + 1 < end:
            b2, b3 = data[sp], data[sp + 1]
            malformed = (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _is_continuation(b2) or not _is_continuation(b3)
            # Malformed: resume after the bytes it takes; else an encoded surrogate, replaced whole.
            return start + _malformed3(b1, b2) if malformed else start + 3
        if sp < end and ((b1 == 0xE0 and data[sp] & 0xE0 == 0x80) or not _is_continuation(data[sp])):
            return sp
        return end
    if b1 >> 3 == 0b11110:  # a four-byte lead (F0..F7)
        if sp + 2 < end:
            # Malformed, or outside the supplementary planes (overlong or past U+10FFFF).
            return start + _malformed4(b1, data[sp], data[sp + 1])
        if b1 > 0xF4 or (sp < end and ((b1 == 0xF0 and not 0x90 <= data[sp] <= 0xBF)
                                       or (b1 == 0xF4 and data[sp] & 0xF0 != 0x80)
                                       or not _is_continuation(data[sp]))):
            return sp
        sp += 1  # the second byte, a continuation, goes with the lead
        return sp if sp < end and not _is_continuation(data[sp]) else end
    return sp  # a continuation byte or a byte no sequence starts with


def _handler(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    # The object is indexed, never copied: a value with an error every few bytes stays linear.
    return _REPLACEMENT, _java_step(error.object, error.start)


codecs.register_error(JAVA_UTF8, _handler)


def java_utf8(data: bytes | bytearray | memoryview) -> str:
    """``new String(data, StandardCharsets.UTF_8)``."""
    return bytes(data).decode("utf-8", JAVA_UTF8)
