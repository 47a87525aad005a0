"""remote-code-checkpoint-conversion: 5.0 - 5.2 load a remote MoE model's experts as random weights.

The defect. 5.0.0 converts checkpoints while loading, by ``config.model_type``: for ``deepseek_v2`` (and the
other types that share ``qwen2_moe``'s entry) the per-expert weights ``mlp.experts.<i>.gate_proj/up_proj/
down_proj`` are fused into ``mlp.experts.gate_up_proj`` / ``mlp.experts.down_proj``, the layout of transformers'
own class. The remote DeepSeek-V2 class (``trust_remote_code``) declares the same model type but keeps one module
per expert: its checkpoint's expert weights are renamed to parameters it does not have and its experts keep
their random initialisation, silently (a load report lists them as missing). ``save_pretrained`` applies the
reverse, so a model saved on these releases does not load back either. 5.3.0 stopped renaming a key whose new
name the model lacks while its old name exists. Measured with the real DeepSeek-V2 file (tiny config): a
checkpoint saved on 4.57.6 loads exactly on 4.57.6, 5.3.0 and 5.24.0; on 5.0.0 and 5.2.0 its 12 expert weights
differ (max logit diff 2.0 after save and reload).

Detection (``probe``): a tiny remote MoE repo of that layout, saved and loaded back with ``from_pretrained``,
must give the saved model's logits.

Correction. For a remote-code model, the conversions of its model type whose targets name none of its
parameters or buffers are left out, on load and on save: they describe another class's layout. Conversions that
do name its parameters, the legacy renamings, a caller's ``key_mapping`` and a quantizer's are kept.
"""

from __future__ import annotations

import re
from typing import Any

from hf_genfix.toolkit.remote_code import is_remote

TARGETS = (
    "transformers.conversion_mapping:get_model_conversion_mapping",
    "transformers.modeling_utils:get_model_conversion_mapping",
)


def _names(entry: Any) -> tuple:
    return type(entry).__name__, tuple(entry.source_patterns), tuple(entry.target_patterns)


def _names_none_of(entry: Any, keys: list[str]) -> bool:
    patterns = [re.compile(re.escape(p).replace(r"\*", ".*")) for p in entry.target_patterns]
    return not any(p.search(key) for p in patterns for key in keys)


def install(patcher: Any) -> None:
    from transformers import conversion_mapping

    patcher.require(TARGETS[0], "model", "key_mapping", "hf_quantizer", "add_legacy")

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        conversions = wrapped(*args, **kwargs)
        model = args[0] if args else kwargs.get("model")
        model_type = getattr(getattr(model, "config", None), "model_type", None)
        if not conversions or model_type is None or not is_remote(type(model)):
            return conversions
        own_type = {_names(e) for e in conversion_mapping.get_checkpoint_conversion_mapping(model_type) or ()}
        if not own_type:
            return conversions
        keys = list(model.state_dict().keys())
        return [e for e in conversions if _names(e) not in own_type or not _names_none_of(e, keys)]

    for target in TARGETS:
        patcher.wrap(target, wrapper)
