"""The conformance modules' shared fixtures (issue 33): `run` drives the module's DRIVER once (the
real CLI against the scripted server; skipped with how to install it when it is not), and
`project` imports the folder it wrote as a user would. A module with several drivers (Claude Code's
two versions) names them in DRIVERS: its tests run once per driver."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from ops import conformance
from ops.drivers.base import Run
from ops.drivers.pins import PINS


def driven(driver) -> Iterator[Run]:
    missing = PINS[driver.key].missing()
    if missing:
        pytest.skip(missing)
    result = driver.run()
    try:
        yield result
    finally:
        shutil.rmtree(result.folder, ignore_errors=True)


def pytest_generate_tests(metafunc):
    drivers = getattr(metafunc.module, "DRIVERS", None)
    if drivers and "run" in metafunc.fixturenames:
        metafunc.parametrize("run", drivers, indirect=True, scope="module", ids=[d.key for d in drivers])


@pytest.fixture(scope="module")
def run(request):
    yield from driven(getattr(request, "param", None) or request.module.DRIVER)


@pytest.fixture
def project(run, db):
    assert run.ok, run.failure()
    return conformance.import_run(run)
