"""Price table and cost estimate."""

from __future__ import annotations

import pytest

from archmax.models.pricing import estimate_cost, price_for
from archmax.session.records import Usage


def test_cost_adds_input_output_cache_read_and_cache_write_at_their_own_prices():
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=1_000_000,
        cache_read_tokens=1_000_000,
        cache_creation_tokens=1_000_000,
    )

    assert estimate_cost("anthropic.claude-sonnet-4-20250514-v1:0", usage) == pytest.approx(3 + 15 + 0.30 + 3.75)


def test_cross_region_prefix_and_provider_scheme_are_ignored():
    plain = price_for("anthropic.claude-3-5-haiku-20241022-v1:0")

    assert price_for("bedrock:us.anthropic.claude-3-5-haiku-20241022-v1:0") == plain
    assert price_for("openai:gpt-4o") == price_for("gpt-4o")


def test_longest_prefix_wins_between_related_models():
    assert price_for("gpt-4o-mini-2024-07-18").input == 0.15
    assert price_for("gpt-4o-2024-08-06").input == 2.50
    assert price_for("anthropic.claude-opus-4-5-20251101-v1:0").input == 5.00
    assert price_for("anthropic.claude-opus-4-1-20250805-v1:0").input == 15.00


@pytest.mark.parametrize("model_id", ["scripted", "meta.llama3-70b-instruct-v1:0", "", None])
def test_unknown_models_have_no_cost_rather_than_zero(model_id):
    assert estimate_cost(model_id, Usage(input_tokens=10)) is None


def test_no_usage_has_no_cost():
    assert estimate_cost("gpt-4o", None) is None
