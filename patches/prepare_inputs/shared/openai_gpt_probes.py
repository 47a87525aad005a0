"""What the OpenAI-GPT probes share: the tiny model, built as the sweep builds it, or ProbeSkipped."""

from __future__ import annotations

from typing import Any


def tiny_openai_gpt() -> Any:
    """The sweep's tiny OpenAI-GPT; ProbeSkipped where the release has none (generate() runs it on every release,
    while the sweep's Subject cannot before 4.48: its forward takes no use_cache)."""
    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.sweep import build

    try:
        return build("openai-gpt", seed=0)
    except ProbeSkipped:
        raise
    except Exception as exc:  # noqa: BLE001 - a release without OpenAI-GPT
        raise ProbeSkipped(f"no tiny OpenAI-GPT here: {type(exc).__name__}") from exc
