"""The bundle as a user deploys it: build settings, failure destinations, alarms, model settings.

Rule source: issue 11 items 1, 4 and 5. The template goes through the SAM transform offline (as in
``test_template.py``); ``samconfig.toml`` and the layer's requirements are read as SAM and pip read them.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from samtranslator.translator.transform import transform

from archmax.hosting import telemetry

from .test_template import _decoded, _OfflinePolicies, _packaged

REPO = Path(__file__).resolve().parents[2]
FUNCTIONS = ("SendFunction", "DeliverFunction", "ResolveFunction", "TimerFunction", "WakeFunction")
STREAM_FUNCTIONS = ("OutboundFunction",)  # invoked by the stream: no model, no async invocations


@pytest.fixture(scope="module")
def transformed() -> dict[str, Any]:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    return transform(_packaged(_decoded()), {"AWS::Region": "us-east-1"}, _OfflinePolicies())


def test_sam_build_runs_the_makefiles_in_place_as_samconfig_says() -> None:
    config = tomllib.loads((REPO / "samconfig.toml").read_text())
    assert config["default"]["build"]["parameters"]["build_in_source"] is True
    resources = _decoded()["Resources"]
    assert resources["ArchmaxLayer"]["Metadata"]["BuildMethod"] == "makefile"
    for name in FUNCTIONS + STREAM_FUNCTIONS:  # a makefile build needs no python3.12 on the build machine
        assert resources[name]["Metadata"] == {"BuildMethod": "makefile"}
        folder = REPO / resources[name]["Properties"]["CodeUri"]
        assert f"build-{name}:" in (folder / "Makefile").read_text()


def test_the_layer_ships_every_adapter_the_model_parameter_offers() -> None:
    wanted = (REPO / "layers" / "archmax" / "requirements.txt").read_text().split()
    offered = _decoded()["Parameters"]["ModelId"]["Description"]
    assert "openai:" in offered and any(w.startswith("openai") for w in wanted)
    assert "bedrock:" in offered  # through the Lambda runtime's boto3, which the layer must not shadow


def test_model_settings_are_template_parameters_in_every_functions_environment(transformed: dict[str, Any]) -> None:
    expected = {
        "ARCHMAX_MODEL": "ModelId",
        "ARCHMAX_MODEL_TIMEOUT_S": "ModelTimeoutSeconds",
        "ARCHMAX_MODEL_MAX_RETRIES": "ModelMaxRetries",
        "ARCHMAX_MODEL_MAX_TOKENS": "ModelMaxTokens",
        "ARCHMAX_API_BASE_URL": "ModelApiBaseUrl",
        "ARCHMAX_API_KEY": "ModelApiKey",
    }
    assert _decoded()["Parameters"]["ModelApiKey"]["NoEcho"] is True
    for name in FUNCTIONS:
        env = transformed["Resources"][name]["Properties"]["Environment"]["Variables"]
        assert {k: env[k] for k in expected} == {k: {"Ref": v} for k, v in expected.items()}


def test_every_asynchronous_invocation_fails_into_the_queue_its_role_may_write(transformed: dict[str, Any]) -> None:
    resources = transformed["Resources"]
    queue = {"Fn::GetAtt": ["AsyncFailureQueue", "Arn"]}
    for name in FUNCTIONS:
        config = resources[f"{name}EventInvokeConfig"]["Properties"]
        assert config["FunctionName"] == {"Ref": name} and config["MaximumRetryAttempts"] == 2
        assert config["DestinationConfig"]["OnFailure"]["Destination"] == queue
        statements = [
            st for policy in resources[f"{name}Role"]["Properties"]["Policies"]
            for st in policy["PolicyDocument"]["Statement"]
        ]  # fmt: skip
        assert {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": queue} in statements


def test_the_alarms_watch_the_queue_and_the_metric_the_timer_emits(transformed: dict[str, Any]) -> None:
    resources = transformed["Resources"]
    depth = resources["AsyncFailuresAlarm"]["Properties"]
    assert (depth["Namespace"], depth["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert depth["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["AsyncFailureQueue", "QueueName"]}}]
    assert depth["Threshold"] == 1 and depth["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    stale = resources["StaleSessionsAlarm"]["Properties"]
    env = resources["TimerFunction"]["Properties"]["Environment"]["Variables"]
    assert stale["Namespace"] == env["POWERTOOLS_METRICS_NAMESPACE"]
    assert stale["MetricName"] == "StaleSessions" and "``StaleSessions``" in (telemetry.__doc__ or "")
    # the dimension set the timer's metrics carry: service and Workflow (archmax.hosting.telemetry)
    assert stale["Dimensions"] == [
        {"Name": "service", "Value": env["POWERTOOLS_SERVICE_NAME"]},
        {"Name": "Workflow", "Value": {"Ref": "Workflow"}},
    ]
    assert stale["EvaluationPeriods"] >= 2  # a session recovered at once does not page anyone


def test_workflow_dir_is_the_layers_folder_for_the_workflow_parameter(transformed: dict[str, Any]) -> None:
    env = transformed["Resources"]["SendFunction"]["Properties"]["Environment"]["Variables"]
    assert env["WORKFLOW_DIR"] == {"Fn::Sub": "/opt/workflows/${Workflow}"}
    makefile = (REPO / "layers" / "archmax" / "Makefile").read_text()
    assert '"$(ROOT)"/workflows/*/' in makefile and "examples/workflows/." in makefile
    assert json.dumps(_decoded()["Parameters"]["Workflow"]).count("workflows/") >= 2
