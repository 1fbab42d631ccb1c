"""kafkalog's stand-in for ``test/__init__.py`` of kafka-python's source tree, which its sdist does not ship.

Without a package file here, ``import test.testutil`` would find the standard library's ``test`` package.  The one
setting that matters to the suite's results is kept: a callback that raises inside a ``kafka.future.Future`` fails
the test instead of being logged and swallowed, as in kafka-python's own test runs.
"""

from kafka.future import Future

Future.error_on_callbacks = True
