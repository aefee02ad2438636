"""A small price table and the cost estimate it gives.

Rule source: DESIGN.md §5 (usage rides every model answer) and §9.3 (``usage`` in the checkpoint,
``metadata.json``). Prices are public list prices in USD per 1M tokens, on-demand, and only an
estimate: batch, provisioned and regional pricing differ. Unknown models cost ``None``, never 0.
"""

from __future__ import annotations

from typing import NamedTuple

from archmax.session.records import Usage


class Price(NamedTuple):
    """USD per 1M tokens."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


# Keyed by model-id prefix, without provider scheme or cross-region prefix; the longest match wins.
PRICES: dict[str, Price] = {
    "anthropic.claude-3-5-haiku": Price(0.80, 4.00, 0.08, 1.00),
    "anthropic.claude-3-5-sonnet": Price(3.00, 15.00, 0.30, 3.75),
    "anthropic.claude-3-7-sonnet": Price(3.00, 15.00, 0.30, 3.75),
    "anthropic.claude-sonnet-4": Price(3.00, 15.00, 0.30, 3.75),
    "anthropic.claude-haiku-4-5": Price(1.00, 5.00, 0.10, 1.25),
    "anthropic.claude-opus-4": Price(15.00, 75.00, 1.50, 18.75),
    "anthropic.claude-opus-4-5": Price(5.00, 25.00, 0.50, 6.25),
    "amazon.nova-micro": Price(0.035, 0.14, 0.00875),
    "amazon.nova-lite": Price(0.06, 0.24, 0.015),
    "amazon.nova-pro": Price(0.80, 3.20, 0.20),
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
}
_SCHEMES = ("bedrock:", "openai:")
_CROSS_REGION = ("us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.")


def price_for(model_id: str | None) -> Price | None:
    """The price of a model, or None when the table does not know it.

    Args:
        model_id: ``anthropic.claude-sonnet-4-...``, ``us.amazon.nova-pro-v1:0``, ``gpt-4o-mini``;
            a ``bedrock:``/``openai:`` scheme is ignored.
    """
    if not model_id:
        return None
    base = model_id
    for scheme in _SCHEMES:
        base = base.removeprefix(scheme)
    for prefix in _CROSS_REGION:
        if base.startswith(prefix):
            base = base[len(prefix) :]
            break
    matches = [key for key in PRICES if base.startswith(key)]
    return PRICES[max(matches, key=len)] if matches else None


def estimate_cost(model_id: str | None, usage: Usage | None) -> float | None:
    """Estimate what one call cost.

    Args:
        model_id: The model called (see :func:`price_for`).
        usage: Token counts; ``input_tokens`` excludes cached tokens (adapters report cache reads
            and writes separately).

    Returns:
        USD, or None when the model is not in the table or there is no usage.
    """
    price = price_for(model_id)
    if price is None or usage is None:
        return None
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_creation_tokens * price.cache_write
    )
    return total / 1_000_000


def priced(model_id: str | None, usage: Usage) -> Usage:
    """``usage`` with ``cost_usd`` set from :func:`estimate_cost` (None when unknown)."""
    return usage.model_copy(update={"cost_usd": estimate_cost(model_id, usage)})
