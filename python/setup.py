"""Installs the flashc package with the shared library inside it.

The library is taken from, in order: $FLASHC_LIBRARY; the repository's build directories
(build/, then the other build*/ directories, newest first); the system's library path (then it
is not bundled: the package finds it at run time). If none has it, it is built with CMake into
<repo>/build-python (CPU backend only when nvcc is not found; extra flags in $FLASHC_CMAKE_ARGS).
No compiler is needed when a library exists. FLASHC_BUILD_LIBRARY=1 forces the CMake build.
"""
import ctypes.util
import glob
import os
import re
import shlex
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
HEADER = os.path.join(REPO, "include", "flashc.h")
LIBRARY = "libflashc.so"


def header_version():
    with open(HEADER) as header:
        text = header.read()
    parts = [re.search(r"#define FLASHC_VERSION_%s (\d+)" % part, text).group(1) for part in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def built_libraries():
    directories = [os.path.join(REPO, "build")]
    others = [d for d in glob.glob(os.path.join(REPO, "build*")) if os.path.basename(d) not in ("build", "build-python")]
    others.sort(key=lambda d: os.path.getmtime(os.path.join(d, LIBRARY)) if os.path.exists(os.path.join(d, LIBRARY)) else 0,
                reverse=True)
    directories += [os.path.join(REPO, "build-python")] + others
    return [os.path.join(d, LIBRARY) for d in directories if os.path.exists(os.path.join(d, LIBRARY))]


def have_nvcc():
    return shutil.which("nvcc") is not None or os.path.exists("/usr/local/cuda/bin/nvcc")


def cmake_build():
    build_dir = os.path.join(REPO, "build-python")
    flags = ["-DCMAKE_BUILD_TYPE=Release", "-DFLASHC_BUILD_TESTS=OFF", "-DFLASHC_BUILD_TOOLS=OFF",
             "-DFLASHC_BUILD_BENCH=OFF"]
    if not have_nvcc():
        flags.append("-DFLASHC_CUDA=OFF")
    flags += shlex.split(os.environ.get("FLASHC_CMAKE_ARGS", ""))
    print("flashc: building libflashc with CMake in %s (%s)" % (build_dir, " ".join(flags)))
    subprocess.check_call(["cmake", "-S", REPO, "-B", build_dir] + flags)
    subprocess.check_call(["cmake", "--build", build_dir, "--target", "flashc", "-j", str(os.cpu_count() or 2)])
    return os.path.join(build_dir, LIBRARY)


def choose_library():
    """Path of the library to bundle, or None when the system's will be used at run time."""
    given = os.environ.get("FLASHC_LIBRARY")
    if given:
        # pip runs this script in python/, so a relative path may be meant from the repository root
        for path in (given, os.path.join(REPO, given)):
            if os.path.isfile(path):
                return path
        raise RuntimeError("flashc: FLASHC_LIBRARY=%s is not a file (give an absolute path)" % given)
    if os.environ.get("FLASHC_BUILD_LIBRARY") == "1":
        return cmake_build()
    found = built_libraries()
    if found:
        return found[0]
    if ctypes.util.find_library("flashc"):
        print("flashc: using the system's libflashc (%s) at run time" % ctypes.util.find_library("flashc"))
        return None
    if not os.path.exists(HEADER):
        raise RuntimeError("flashc: no libflashc found and no source tree to build it from; set FLASHC_LIBRARY")
    return cmake_build()


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        library = choose_library()
        if library:
            target_dir = os.path.join(self.build_lib, "flashc", "_lib")
            os.makedirs(target_dir, exist_ok=True)
            target = os.path.join(target_dir, LIBRARY)
            shutil.copyfile(os.path.realpath(library), target)  # the real file, not the symlink chain
            print("flashc: bundled %s as %s" % (library, target))


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(version=header_version(), cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
