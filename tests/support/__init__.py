"""Helpers shared by the test folders (importable from any of them as ``tests.support.*``), and the golden-data
constants.
"""
