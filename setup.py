"""Builds kafkalog's compiled core, ``kafkalog._core``, from ``kafkalog/_core.pyx`` and the kernel families it
includes (``kafkalog/_core_pyx/*.pxi``).

Everything declarative lives in ``pyproject.toml``; this file only describes the extension.  The
Cython compiler directives are set here and nowhere else.  ``KAFKALOG_CYTHON_DEBUG=1`` turns bounds,
wraparound and initialisation checks back on, keeps assertions, and writes the annotated HTML next to
the ``.pyx`` (useful when a kernel misbehaves or to see which lines still touch Python).
"""

import glob
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("KAFKALOG_CYTHON_DEBUG", "") not in ("", "0")

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
    "binding": True,
}

extra_compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]

extensions = [
    Extension(
        "kafkalog._core",
        ["kafkalog/_core.pyx"],
        include_dirs=["kafkalog"],
        # The kernel families _core.pyx includes, and the C helpers: a change to any rebuilds the extension.
        depends=["kafkalog/_kernels.h", *sorted(glob.glob("kafkalog/_core_pyx/*.pxi"))],
        libraries=["m"],  # sin() for the MD5 constants
        extra_compile_args=extra_compile_args,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=COMPILER_DIRECTIVES,
        annotate=DEBUG,
    ),
)
