"""The agent pins bin/setup --agents installs (ops/drivers/pins.py): a PyPI pin is a virtualenv under
var/agents/<key>/ made with the Python the agent needs; it says how to get what is missing, and the
lines bin/setup reads keep one field per place for npm and PyPI pins alike."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

from ops.drivers import pins
from ops.drivers.pins import NPM, PYPI, Pin


def fake_venv(folder, dist: str, version: str, bin: str) -> None:
    (folder / "lib" / "python3.12" / "site-packages" / f"{dist}-{version}.dist-info").mkdir(parents=True)
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / bin).write_text("#!/bin/sh\n")
    (folder / "bin" / "python").write_text("#!/bin/sh\n")


def test_a_pypi_pin_is_installed_when_its_virtualenv_has_the_pinned_version(tmp_path, monkeypatch):
    monkeypatch.setattr(pins, "AGENTS_DIR", tmp_path)
    pin = Pin("kimi", "kimi-cli", "1.51.0", "kimi", kind=PYPI, python="3.12")
    assert pin.exe == tmp_path / "kimi" / "bin" / "kimi"
    assert "kimi-cli==1.51.0 is not installed" in pin.missing() and "found: nothing" in pin.missing()
    fake_venv(tmp_path / "kimi", "kimi_cli", "1.51.0", "kimi")  # pip writes the name with _ for -
    assert pin.installed_version() == "1.51.0"
    assert pin.missing() is None


def test_another_version_in_the_virtualenv_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(pins, "AGENTS_DIR", tmp_path)
    fake_venv(tmp_path / "gptme", "gptme", "0.34.0", "gptme")
    said = Pin("gptme", "gptme", "0.35.1", "gptme", kind=PYPI, python="3.12").missing()
    assert said.startswith("gptme==0.35.1 is not installed") and "found: 0.34.0" in said and "bin/setup --agents" in said


def test_a_missing_python_is_said_with_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(pins, "AGENTS_DIR", tmp_path)
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    pin = Pin("far", "some-agent", "1.0", "far", kind=PYPI, python="3.99")
    assert pin.interpreter() is None
    said = pin.missing()
    assert "needs Python 3.99" in said and "pyenv install 3.99" in said and "bin/setup --agents" in said


def test_the_python_found_is_the_version_asked_for():
    import sys  # noqa: PLC0415

    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    found = pins.find_python(here)
    assert found is not None and found.exists()
    assert pins.find_python("3.99") is None


def test_bin_setup_reads_six_fields_per_pin(monkeypatch):
    monkeypatch.setattr(pins, "PINS", {
        "a": Pin("a", "@scope/a", "1.2.3", "a", extra=("@scope/a-linux@1.2.3",), flags=("--omit=optional",)),
        "b": Pin("b", "b-cli", "4.5.6", "b", extra=("certifi==2024.1.1.post1",), flags=("--no-deps",), kind=PYPI, python="3.99"),
    })
    out = io.StringIO()
    with redirect_stdout(out):
        pins.main()
    lines = [line.split("|") for line in out.getvalue().splitlines()]
    assert lines == [
        ["a", "@scope/a@1.2.3 @scope/a-linux@1.2.3", "--omit=optional", "a", NPM, ""],
        ["b", "b-cli==4.5.6 certifi==2024.1.1.post1", "--no-deps", "b", PYPI, ""],  # no Python 3.99: empty
    ]
