"""kafkalog's benchmark suite (pytest-benchmark), shipped with the package so that ``kafkalog bench`` runs it
from an installed kafkalog as from a source checkout.

The modules here are pytest files, not an API: ``kafkalog bench`` (:mod:`kafkalog.cli.bench`) runs this
folder in a child ``pytest`` and writes the report; ``python -m pytest <this folder> --benchmark-only`` runs it
directly.  Importing them needs the ``bench`` extra (``pip install 'kafkalog[bench]'``).  ``README.md`` beside
them describes every group and keeps the figures of the latest full run.
"""
