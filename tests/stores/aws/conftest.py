"""Fixtures for the AWS store tests: one moto server per test session, reset before each test."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _moto_env() -> Any:
    # Loaded by path under one fixed name, shared with the conformance registry (see moto_env.load).
    name = "archmax_tests_moto_env"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("moto_env.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def moto_server() -> Iterator[Any]:
    """The ThreadedMotoServer on 127.0.0.1 (an OS-chosen port), started once per test session."""
    env = _moto_env()
    yield env.server()
    env.stop_server()


@pytest.fixture
def aws_env(moto_server: Any) -> Any:
    """A reset moto with the sessions table (built from template.yaml) and bucket; clients injected."""
    return _moto_env().fresh_env()


@pytest.fixture
def aws_store(aws_env: Any) -> Any:
    """An ``AwsStore`` with no key prefix on the fresh table and bucket."""
    return aws_env.store()
