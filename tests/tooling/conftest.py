"""Fixtures of the tooling tests (the doctor's fixture registry lives in doctor_fixture.py)."""

from doctor_fixture import make_registry  # noqa: F401 - a pytest fixture, registered by being imported here
