"""Secrets named by reference, read through Powertools Parameters (SSM Parameter Store / Secrets Manager).

Rule source: issue 13 (webhook signing secrets and the reply-token secret are read through
Powertools Parameters, never stored in the repo or the workflow). A reference is one string:

=============================  ==========================================================
``ssm:/archmax/stripe``        SSM parameter ``/archmax/stripe`` (SecureString decrypted)
``secretsmanager:stripe-hook``  Secrets Manager secret ``stripe-hook`` (string or binary)
``/archmax/stripe``            a bare name is an SSM parameter
=============================  ==========================================================

Powertools caches each value for ``max_age`` seconds (default 300), so a warm function reads a
secret once per five minutes, and a rotated secret takes effect within that window.
"""

from __future__ import annotations

from typing import Any

from archmax.errors import ConfigurationError

SSM_PREFIX = "ssm:"
SECRETS_MANAGER_PREFIX = "secretsmanager:"
MAX_AGE_S = 300


def parse_reference(reference: str) -> tuple[str, str]:
    """``(kind, name)`` of a secret reference: kind ``"ssm"`` or ``"secretsmanager"``.

    Raises:
        ConfigurationError: an empty reference or an empty name after the prefix.
    """
    if not isinstance(reference, str) or not reference.strip():
        raise ConfigurationError("a secret reference must be a non-empty string")
    kind, name = "ssm", reference
    for prefix, named in ((SSM_PREFIX, "ssm"), (SECRETS_MANAGER_PREFIX, "secretsmanager")):
        if reference.startswith(prefix):
            kind, name = named, reference[len(prefix) :]
    if not name.strip():
        raise ConfigurationError(f"secret reference {reference!r} names nothing", setting=reference)
    return kind, name


def read_secret(reference: str, *, ssm_client: Any = None, secrets_client: Any = None) -> bytes:
    """The bytes of the secret ``reference`` names (a string value is UTF-8 encoded).

    Args:
        reference: ``ssm:<name>``, ``secretsmanager:<name>`` or a bare SSM parameter name.
        ssm_client: A boto3 SSM client to use instead of the default one (tests, other regions).
        secrets_client: A boto3 Secrets Manager client likewise.

    Returns:
        The secret's bytes; never empty.

    Raises:
        ConfigurationError: the parameter or secret is missing, unreadable or empty, or no client can be
            built (no region or credentials configured).
    """
    from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider
    from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
    from botocore.exceptions import BotoCoreError

    kind, name = parse_reference(reference)
    try:
        if kind == "ssm":
            value = _provider(SSMProvider, ssm_client).get(name, max_age=MAX_AGE_S, decrypt=True)
        else:
            value = _provider(SecretsProvider, secrets_client).get(name, max_age=MAX_AGE_S)
    except (GetParameterError, BotoCoreError) as exc:  # BotoCoreError: no region, no credentials, no endpoint
        raise ConfigurationError(f"cannot read the secret {reference!r}: {exc}", setting=reference) from None
    secret = value.encode("utf-8") if isinstance(value, str) else bytes(value or b"")
    if not secret:
        raise ConfigurationError(f"the secret {reference!r} is empty", setting=reference)
    return secret


_PROVIDERS: dict[tuple[type, int], Any] = {}


def _provider(cls: type, client: Any) -> Any:
    """One provider per class and client, so Powertools' cache lives as long as the process."""
    key = (cls, id(client))
    if key not in _PROVIDERS:
        _PROVIDERS[key] = cls(boto3_client=client) if client is not None else cls()
    return _PROVIDERS[key]
