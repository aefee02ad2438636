"""Rules of BEHAVIOUR.md §11 (CLI) that the rule audit (tests/RULES.md) found without a test: the
``--store aws:<table>/<bucket>[/<prefix>]`` form, and an AWS store that cannot be set up answering
``error: <message>`` with exit 1 instead of a traceback. No AWS endpoint is contacted: building
boto3 clients makes no request.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archmax.cli import main
from archmax.cli.workspace import open_store
from archmax.stores.aws import AwsStore

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def no_aws_region(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment where boto3 finds no region: no region variables, an empty config file."""
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "aws-config"
    empty.write_text("", encoding="utf-8")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.mark.parametrize(
    ("flag", "table", "bucket", "prefix"),
    [
        ("aws:sessions/my-bucket", "sessions", "my-bucket", "sessions/"),  # the stack's SESSIONS_PREFIX
        ("aws:sessions/my-bucket/", "sessions", "my-bucket", ""),  # an empty prefix: the bucket root
        ("aws:sessions/my-bucket/prod/archmax", "sessions", "my-bucket", "prod/archmax/"),
    ],
)
def test_store_flag_aws_names_table_bucket_and_optional_prefix(flag, table, bucket, prefix, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    store = open_store(flag, Path("."))
    assert isinstance(store, AwsStore)
    assert (store.table_name, store.bucket, store.keys.root) == (table, bucket, prefix)


@pytest.mark.usefixtures("no_aws_region")
def test_an_aws_store_with_no_region_configured_is_an_error_line_and_exit_1_not_a_traceback(capsys):
    code = main(["--root", str(EXAMPLES), "--store", "aws:sessions/my-bucket", "sessions"])
    err = capsys.readouterr().err
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "region" in lines[0]
    assert "Traceback" not in err
