"""decoding-unprepared-config: ``_get_logits_processor`` / ``_get_stopping_criteria`` called outside ``generate()``.

The defect. Sampling loops of their own call the model's ``_get_logits_processor(...)`` and
``_get_stopping_criteria(...)`` with a generation config that ``generate()`` never prepared: ChatGLM2/3 and
GLM-4's ``stream_generate`` (behind ``stream_chat``), MiniCPM's, and third-party loops (lagent, InternLM's web
demos, FastChat's GLM worker). 4.43.0 made both read ``generation_config._eos_token_tensor``, which only
``generate()``'s ``_prepare_special_tokens`` sets: ``AttributeError: 'GenerationConfig' object has no attribute
'_eos_token_tensor'`` (public reports from 4.43.2 on; measured 4.43.4, 4.45.0, 4.57.6, 5.24.0; 4.42.4 reads
``eos_token_id`` and passes). Later releases read it with ``getattr(..., None)`` in some places and drop what
depends on it instead (5.24's ``_get_logits_processor`` leaves out the min-length processor): still no error
from the first call, the crash comes from ``_get_stopping_criteria``.

Detection (``probe``): the tiny ChatGLM3-style remote repo's own ``stream_generate`` must decode greedily like
full no-cache forwards.

Correction. A config without ``_eos_token_tensor`` is copied, the copy prepared by the model's own
``_prepare_special_tokens`` (what ``generate()`` does first), and the call made with the copy: the caller's config
is left as it was (a prepared config stops being serializable). A prepared config is passed through untouched.
"""

from __future__ import annotations

import copy
from typing import Any

from hf_genfix.toolkit import recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

TARGETS = ("transformers.generation.utils:GenerationMixin._get_logits_processor",
           "transformers.generation.utils:GenerationMixin._get_stopping_criteria")
PREPARE = "transformers.generation.utils:GenerationMixin._prepare_special_tokens"


def install(patcher: Any) -> None:
    patcher.require(PREPARE, "generation_config", "kwargs_has_attention_mask", "device")
    for target in TARGETS:
        patcher.require(target, "generation_config")

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        given = kwargs.get("generation_config", args[0] if args else None)
        if instance is None or given is None or hasattr(given, "_eos_token_tensor"):
            return record.through(wrapped, args, kwargs)
        prepared = copy.copy(given)
        instance._prepare_special_tokens(prepared, None, device=instance.device)
        if record.on:
            record.changed("%s with a copy of the generation config prepared as "
                            "generate() prepares it", getattr(wrapped, "__name__", "the call"))
        if "generation_config" in kwargs:
            return wrapped(*args, **{**kwargs, "generation_config": prepared})
        return wrapped(prepared, *args[1:], **kwargs)

    for target in TARGETS:
        patcher.wrap(target, wrapper)
