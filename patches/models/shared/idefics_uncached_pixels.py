"""model-idefics2/idefics3/smolvlm-uncached-pixels (one patch per model, one fix): on 5.0-5.3, Idefics2, Idefics3 and
SmolVLM with ``generate(use_cache=False)`` lose the image after the first step (silently wrong from the second
generated token).

The defect. Without a cache every step feeds the whole sequence again, image placeholder tokens included, so
the image features must be injected again every step. 5.0.0 rewrote these three models'
``prepare_inputs_for_generation`` to drop ``pixel_values`` (and ``pixel_attention_mask``) on every step but the
first (``image_hidden_states is not None or not is_first_iteration``), whether or not a cache holds the image's
keys: with ``use_cache=False`` the placeholders of steps 1.. are embedded as the plain ``<image>`` token, and every
logit from the second generated token on is wrong (0.142 on a tiny Idefics2, 0.224 on tiny Idefics3 and SmolVLM).
Up to 4.57 the test was ``cache_position[0] != 0`` (always 0 without a cache); 5.4.0 made it
``use_cache and not is_first_iteration``.

Detection. ``probe()``: the sweep's tiny Idefics2, Idefics3 and SmolVLM, one prompt with one image, greedy
``generate(use_cache=False)``, every step against a no-cache forward of prompt + image + generated tokens.

Correction. The three classes' ``prepare_inputs_for_generation`` are wrapped: only when the call says
``use_cache=False``, gives ``pixel_values`` and no ``image_hidden_states``, and upstream dropped the pixels although
the ids it feeds still hold the image token, the pixels (and their mask) are given back -- what 5.4.0 does. Every
cached call, every call with ``image_hidden_states`` and every call feeding no image token (generation from
``inputs_embeds``) gets upstream's inputs as they are.
"""

from __future__ import annotations

from typing import Any

MODELS = {
    "idefics2": "transformers.models.idefics2.modeling_idefics2:Idefics2ForConditionalGeneration",
    "idefics3": "transformers.models.idefics3.modeling_idefics3:Idefics3ForConditionalGeneration",
    "smolvlm": "transformers.models.smolvlm.modeling_smolvlm:SmolVLMForConditionalGeneration",
}


def _install(patcher: Any, arch: str) -> None:
    target = MODELS[arch] + ".prepare_inputs_for_generation"
    patcher.require(target, "pixel_values", "image_hidden_states")
    patcher.wrap(target, _prepare_inputs)


def install_idefics2(patcher: Any) -> None:
    _install(patcher, "idefics2")


def install_idefics3(patcher: Any) -> None:
    _install(patcher, "idefics3")


def install_smolvlm(patcher: Any) -> None:
    _install(patcher, "smolvlm")


def _prepare_inputs(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    inputs = wrapped(*args, **kwargs)
    pixels = kwargs.get("pixel_values")
    if kwargs.get("use_cache", True) is not False or pixels is None or kwargs.get("image_hidden_states") is not None:
        return inputs
    if not isinstance(inputs, dict) or inputs.get("pixel_values") is not None:
        return inputs
    ids, image_token = inputs.get("input_ids"), getattr(instance.config, "image_token_id", None)
    if ids is None or inputs.get("inputs_embeds") is not None or image_token is None:
        return inputs
    if not bool((ids == image_token).any()):
        return inputs  # no placeholder fed: upstream's inputs are what the forward can take
    return {**inputs, "pixel_values": pixels, "pixel_attention_mask": kwargs.get("pixel_attention_mask")}
