"""Fixtures for the AWS store tests: one moto server per test session, reset before each test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from . import moto_env


@pytest.fixture(scope="session")
def moto_server() -> Iterator[Any]:
    """The ThreadedMotoServer on 127.0.0.1 (an OS-chosen port), started once per test session."""
    yield moto_env.server()
    moto_env.stop_server()


@pytest.fixture
def aws_env(moto_server: Any) -> Any:
    """A reset moto with the sessions table (built from template.yaml) and bucket; clients injected."""
    return moto_env.fresh_env()


@pytest.fixture
def aws_store(aws_env: Any) -> Any:
    """An ``AwsStore`` with no key prefix on the fresh table and bucket."""
    return aws_env.store()
