"""``python -m kafkalog``: the ``kafkalog`` command (see :mod:`kafkalog.cli`)."""

from .cli import entry_point

if __name__ == "__main__":
    entry_point()
