"""pytest setup: import flashc from this checkout (python/) unless FLASHC_TEST_INSTALLED=1 asks
for the installed package, and a seeded random generator per test (FLASHC_TEST_SEED=<n> to
reproduce; the seed is printed on failure)."""
import os
import sys
import zlib

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("FLASHC_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(HERE))

SEED = int(os.environ.get("FLASHC_TEST_SEED", np.random.SeedSequence().entropy % (2 ** 32)))


def pytest_report_header(config):
    import flashc
    return [f"flashc {flashc.__version__} from {flashc.library_path}", f"FLASHC_TEST_SEED={SEED}"]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The seed again at the end (-q hides the header): a failure is replayed with it."""
    if exitstatus != 0:
        terminalreporter.write_line(f"FLASHC_TEST_SEED={SEED} (replays this run's random cases)")


@pytest.fixture
def rng(request):
    """A generator seeded from the run's seed and the test's name (stable per test)."""
    return np.random.default_rng([SEED, zlib.crc32(request.node.nodeid.encode())])
