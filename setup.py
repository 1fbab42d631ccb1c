"""Builds kafkalog's compiled core, ``kafkalog._core``, from ``kafkalog/_core.pyx`` and the kernel families it
includes (``kafkalog/_core_pyx/*.pxi``).

Everything declarative lives in ``pyproject.toml``; this file only describes the extension.  The
Cython compiler directives are set here and nowhere else.  ``KAFKALOG_CYTHON_DEBUG=1`` turns bounds,
wraparound and initialisation checks back on, keeps assertions, and writes the annotated HTML next to
the ``.pyx`` (useful when a kernel misbehaves or to see which lines still touch Python).

The compiled core is optional at install time: kafkalog runs on its plain-Python twin (``kafkalog/_core_py``)
without it, only slower.  So when the C compiler is missing or fails, the build warns (saying how to get
the compiled core) and installs the package without ``kafkalog._core`` instead of failing the install, as
simplejson's and markupsafe's builds do.  ``KAFKALOG_REQUIRE_EXTENSION=1`` (CI sets it) turns that fallback
back into a failed build, as it turns the runtime fallback into an ImportError (``kafkalog/_impl.py``).
"""

import glob
import os
import sys

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError

DEBUG = os.environ.get("KAFKALOG_CYTHON_DEBUG", "") not in ("", "0")
# The same reading of the flag as kafkalog/_impl.py's.
REQUIRE_EXTENSION = os.environ.get("KAFKALOG_REQUIRE_EXTENSION", "").strip().lower() not in ("", "0", "false", "no")

#: What a failed compile says, on stderr and in pip's log (``pip install -v`` shows it).
NO_COMPILER_WARNING = """
WARNING: kafkalog's compiled core (kafkalog._core) could not be built: {error}
kafkalog is installed without it and runs on its plain-Python kernels, which give the same results,
only slower (kafkalog.implementation() says "python").  To get the compiled core, install a C
compiler (Debian/Ubuntu: apt-get install build-essential python3-dev; Fedora: dnf install gcc
python3-devel; macOS: xcode-select --install), then reinstall kafkalog:
    pip install --force-reinstall --no-deps --no-binary kafkalog kafkalog    (or `make build` in a checkout)
Set KAFKALOG_REQUIRE_EXTENSION=1 to make a build without the compiled core fail instead.
"""

# What the compiler or the platform raise when the extension cannot be built; anything else is a bug
# in the build and still fails it.
BUILD_ERRORS = (CCompilerError, CompileError, ExecError, LinkError, PlatformError)


class OptionalBuildExt(build_ext):
    """build_ext that, unless KAFKALOG_REQUIRE_EXTENSION is set, turns a failed compile into a warning.

    An editable install (``make``'s) then copies only the extensions that were built into the checkout: one whose
    compile fell back has no file to copy.  (setuptools skips such a copy for an ``optional`` extension, but
    ``cythonize`` does not carry ``optional`` over to the extensions it returns.)
    """

    def initialize_options(self) -> None:
        super().initialize_options()
        #: The extensions whose compile fell back.
        self.not_built: set[str] = set()

    def run(self) -> None:
        try:
            super().run()
        except BUILD_ERRORS as e:  # no compiler at all (PlatformError) fails before any extension
            self.not_built.update(ext.name for ext in self.extensions)
            self._fall_back(e)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except BUILD_ERRORS as e:
            self.not_built.add(ext.name)
            self._fall_back(e)

    def copy_extensions_to_source(self) -> None:
        every = self.extensions
        self.extensions = [ext for ext in every if ext.name not in self.not_built]
        try:
            super().copy_extensions_to_source()
        finally:
            self.extensions = every

    def _fall_back(self, error: Exception) -> None:
        if REQUIRE_EXTENSION:
            raise error
        message = NO_COMPILER_WARNING.format(error=str(error).strip() or type(error).__name__)
        print(message, file=sys.stderr)

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
    cmdclass={"build_ext": OptionalBuildExt},
    ext_modules=cythonize(
        extensions,
        compiler_directives=COMPILER_DIRECTIVES,
        annotate=DEBUG,
    ),
)
