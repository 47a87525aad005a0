"""The removed ``GenerationMixin`` methods old remote code calls that more than one patch serves
(``remote-code-model-methods``, ``remote-code-extract-past``).
"""

from __future__ import annotations

from typing import Any

_KEYS = ("past_key_values", "mems", "past_buckets_states", "cache_params")


def extract_past_from_model_output(self: Any, outputs: Any, standardize_cache_format: Any = None) -> Any:
    """4.40 (called with ``standardize_cache_format``): the cache; 4.42 - 4.48 (called without it):
    ``(cache_name, cache)``."""
    name, past = "past_key_values", None
    for key in _KEYS:
        if key in outputs:
            name, past = key, outputs[key]
            break
    if standardize_cache_format is None:
        return name, past
    if standardize_cache_format and hasattr(self, "_convert_to_standard_cache"):
        past = self._convert_to_standard_cache(past, batch_size=outputs.logits.shape[0])
    return past
