"""Shared fixtures."""
from __future__ import annotations

import pytest

from pqlab import liboqs_build


def provide_or_skip(variant: str):
    """The `variant` liboqs build, built on first need (cached per user); a skip only where a build
    tool is missing, any other build failure fails the test."""
    try:
        return liboqs_build.provide(variant)
    except liboqs_build.BuildToolMissing as exc:
        pytest.skip(f"the {variant} liboqs build is not installed and cannot be built here: {exc}")


@pytest.fixture(scope="session")
def provide_liboqs():
    """provide_or_skip, for tests that take the variant as a parameter."""
    return provide_or_skip


@pytest.fixture(scope="session")
def generic_liboqs():
    """The portable (generic) liboqs build, installed in .venv/liboqs/generic."""
    return provide_or_skip("generic")
