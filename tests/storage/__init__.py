"""Tests of the storage layer: FileMessageSet, the offset, time and transaction indexes, LogSegment, LogSegments,
checkpoints, producer state and segment file names.
"""
