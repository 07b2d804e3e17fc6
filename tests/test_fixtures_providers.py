"""The shared test fixtures reach the objects the tests use: one module object per file, and the
``close_providers`` fixture really closes what a test tracked."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.chat import track


class _Probe:
    """Stands in for an SDK-backed provider: it only records that it was closed."""

    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def probe() -> Iterator[_Probe]:
    """Set up before ``close_providers`` (it is named first), so its teardown runs after it."""
    created = _Probe()
    yield created
    assert created.closed, "close_providers did not close the provider the test tracked"


def test_close_providers_closes_what_the_test_tracked(probe: _Probe, close_providers: None) -> None:
    assert track(probe) is probe
    assert not probe.closed  # only the fixture's teardown closes it


def test_no_test_helper_is_loaded_under_two_names() -> None:
    """A file imported as ``tests.fakes.chat`` and as ``fakes.chat`` is two modules with two
    states: what one tracks, the other never closes."""
    tests_dir = Path(__file__).resolve().parent
    names: dict[Path, list[str]] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file is not None and Path(file).resolve().is_relative_to(tests_dir):
            names.setdefault(Path(file).resolve(), []).append(name)
    twice = {str(path): found for path, found in names.items() if len(found) > 1}
    assert not twice
