"""remote-code-attention-mask: old remote models get no attention mask from ``generate()`` (5.18+).

The defect. Every 4.x ``generate()`` gave the model a mask, making an all-ones one when the caller had none,
and remote code written then relies on it: DeepSeek-V2's eager attention asserts ``attention_mask is not None``
(its 4D mask comes from ``_prepare_4d_causal_attention_mask``, None for a one-token step without a 2D mask).
From 5.18.0 ``generate()`` drops a mask that is all ones (no padding) and passes ``attention_mask=None``: the
first decode step of an unpadded batch raises a bare ``AssertionError`` (greedy, sampling, beam search and
prompt lookup alike). Measured with the real DeepSeek-V2 file and with the tiny DeepSeek-style repo: 5.17.0
generates like the reference; 5.18.0 and 5.24.0 fail. The ChatGLM families' own
``_update_model_kwargs_for_generation`` meets the same None (``remote-code-update-kwargs``).

Detection (``probe``): the tiny DeepSeek-style repo must generate like its no-cache reference on an
equal-length, unpadded batch.

Correction. A remote class's own ``prepare_inputs_for_generation`` of the ``past_key_values`` era, called by
transformers' generation code with ``attention_mask=None`` and the whole sequence (``input_ids``), gets the mask
4.x made for it: ones over that sequence. Calls from anywhere else (a user's loop) are passed through.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit.prepare_inputs import wrap_overrides
from hf_genfix.toolkit.remote_code import caller_module, is_remote
from hf_genfix.toolkit.tuple_caches import written_for_past_key_values

_MISSING = object()


def install(patcher: Any) -> None:
    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if instance is None or kwargs.get("attention_mask", _MISSING) is not None:
            return wrapped(*args, **kwargs)
        ids = args[0] if args else kwargs.get("input_ids")
        if getattr(ids, "ndim", 0) == 2 and ids.shape[1] > 0 and caller_module().startswith("transformers.generation"):
            kwargs["attention_mask"] = ids.new_ones(ids.shape)
        return wrapped(*args, **kwargs)

    wrap_overrides(patcher, wrapper, where=lambda cls: is_remote(cls) and written_for_past_key_values(cls))
