"""The limit on how fast the log cleaner reads and writes: ``log.cleaner.io.max.bytes.per.second``.

Port of ``core/src/main/scala/kafka/utils/Throttler.scala`` (0.10.1.1; 3.8.0:
``storage/src/main/java/org/apache/kafka/storage/internals/utils/Throttler.java``).  One throttler is shared by
every cleaner thread of a :class:`~kafkalog.cleaner.log_cleaner.LogCleaner`; each read and write of a round reports its
size, and once a check interval has passed the caller sleeps long enough to bring the observed rate down to
the desired one.  A rate of ``1e300`` or more is no limit (Kafka's ``Double.MaxValue``).
"""

from __future__ import annotations

import logging
import threading

from ..scheduler import SYSTEM_TIME, Time

__all__ = ["Throttler"]

# The cleaner's logger, as before the throttler had a module of its own: its DEBUG line is a cleaner's line.
logger = logging.getLogger("kafkalog.cleaner")


class Throttler:
    """Limits the cleaner's I/O to ``desired_rate_per_sec`` bytes a second (Kafka: ``kafka.utils.Throttler``):
    after each ``check_interval_ms`` it sleeps long enough to bring the observed rate down to the target."""

    def __init__(self, desired_rate_per_sec: float, check_interval_ms: int = 300, time: Time = SYSTEM_TIME) -> None:
        self.desired_rate_per_sec = desired_rate_per_sec
        self.check_interval_ms = check_interval_ms
        self.time = time
        self._lock = threading.Lock()
        self._period_start = time.milliseconds()
        self._observed = 0.0

    def update_desired_rate_per_sec(self, updated_desired_rate_per_sec: float) -> None:
        """Kafka: ``updateDesiredRatePerSec`` (a reconfigured ``log.cleaner.io.max.bytes.per.second``)."""
        with self._lock:
            self.desired_rate_per_sec = updated_desired_rate_per_sec

    def maybe_throttle(self, observed: float) -> None:
        """Kafka: ``maybeThrottle``."""
        if self.desired_rate_per_sec >= 1e300:
            return
        with self._lock:
            self._observed += observed
            now = self.time.milliseconds()
            elapsed_ms = now - self._period_start
            if elapsed_ms > self.check_interval_ms and self._observed > 0:
                rate = self._observed / (elapsed_ms / 1000.0)
                if rate > self.desired_rate_per_sec:
                    desired_ms = self._observed / self.desired_rate_per_sec * 1000.0
                    sleep_ms = round(desired_ms - elapsed_ms)
                    if sleep_ms > 0:
                        logger.debug("Natural rate is %f per second but desired rate is %f, sleeping for %d ms "
                                     "to compensate.", rate, self.desired_rate_per_sec, sleep_ms)
                        self.time.sleep(sleep_ms)
                self._period_start = self.time.milliseconds()
                self._observed = 0.0
