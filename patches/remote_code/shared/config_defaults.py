"""The generation defaults old remote configurations set, and which of them a configuration was given: shared by
``remote-code-config-defaults`` and ``remote-code-config-generation-defaults``.
"""

from __future__ import annotations

from typing import Any

# transformers 4.57.6, PretrainedConfig._get_global_generation_defaults().
GENERATION_DEFAULTS: dict[str, Any] = {
    "max_length": 20, "min_length": 0, "do_sample": False, "early_stopping": False, "num_beams": 1,
    "temperature": 1.0, "top_k": 50, "top_p": 1.0, "typical_p": 1.0, "repetition_penalty": 1.0,
    "length_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0, "bad_words_ids": None,
    "num_return_sequences": 1, "output_scores": False, "return_dict_in_generate": False,
    "forced_bos_token_id": None, "forced_eos_token_id": None, "remove_invalid_values": False,
    "exponential_decay_length_penalty": None, "suppress_tokens": None, "begin_suppress_tokens": None,
    "num_beam_groups": 1, "diversity_penalty": 0.0,
}


# id(config) -> the generation parameters its config.json gave (configs are not hashable on 5.x).
GIVEN: dict[int, dict[str, Any]] = {}


def given(config: Any) -> dict[str, Any]:
    """The generation parameters ``config.json`` gave this (remote) configuration."""
    return GIVEN.get(id(config), {})
