"""Tests of :mod:`kafkalog.urls`: log dirs and partition dirs read by URL, through fsspec."""
