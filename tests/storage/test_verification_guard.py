"""kafkalog.producer_state.VerificationGuard against Kafka's ``VerificationGuardTest`` (3.8.0,
``core/src/test/scala/unit/kafka/log/VerificationGuardTest.scala``), every assertion.

Kafka asserts that two guards hash differently: their values are distinct small integers, whose Python hashes
are the integers themselves, so the assertion holds here as in Java.
"""

from __future__ import annotations

from kafkalog.producer_state import VerificationGuard


def test_equals_and_hash_code() -> None:
    """``VerificationGuardTest.testEqualsAndHashCode``."""
    guard1, guard2 = VerificationGuard(), VerificationGuard()
    sentinel = VerificationGuard.SENTINEL
    assert guard1 != guard2
    assert sentinel != guard1
    assert sentinel == VerificationGuard.SENTINEL  # the same object, equal to itself

    assert hash(guard1) != hash(guard2)
    assert hash(sentinel) != hash(guard1)
    assert hash(sentinel) == hash(sentinel)


def test_verify() -> None:
    """``VerificationGuardTest.testVerify``."""
    guard1, guard2 = VerificationGuard(), VerificationGuard()
    sentinel = VerificationGuard.SENTINEL
    assert not guard1.verify(guard2)
    assert not guard1.verify(sentinel)
    assert not sentinel.verify(guard1)
    assert not sentinel.verify(sentinel)
    assert guard1.verify(guard1)
