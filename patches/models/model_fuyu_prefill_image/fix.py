"""model-fuyu-prefill-image: Fuyu on 4.54 generates with a cache (the default) as if its prompt held no image: the
image patches are dropped at the prompt's own forward (silently wrong from the first generated token).

The defect. ``FuyuForCausalLM.prepare_inputs_for_generation`` drops ``image_patches`` and
``image_patches_indices`` whenever ``past_key_values is not None``: meant for the decoding steps, once the prompt's
forward has put the image's keys in the cache. Up to 4.53 generate() handed its first step no cache object, so the
prompt kept its image; from 4.54.0 generate() makes the cache before the first step, so the prompt's forward loses
the image too and embeds its placeholders as the plain image token. Every generated token is wrong (2.59 at the
first on the sweep's tiny Fuyu, 6.95-7.04 on the loud one). 4.55.0 has the same code but cannot run an image
prompt at all (``FuyuModel`` calls a ``get_placeholder_tokens`` it lacks: loud, with or without hf_genfix); 4.55.1
drops the patches only where ``cache_position[0] != 0``. ``generate(use_cache=False)`` is right (no cache: the image
every step).

Detection. ``probe()``: the sweep's image-cached scenario on its tiny Fuyu (a persimmon text model 32 wide, 16x16
images in 4x4 patches): one prompt with one image, greedy cached ``generate()``, every step against a no-cache
forward of prompt, image and generated tokens.

Correction. ``prepare_inputs_for_generation`` is wrapped: where upstream dropped the patches the caller gave and the
step is the prompt's own forward (``cache_position`` given, starting at 0), they are given back, as 4.55.1 does.
Decoding steps, calls without ``cache_position`` and calls where upstream kept the patches are upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import recorder

TARGET = "transformers.models.fuyu.modeling_fuyu:FuyuForCausalLM.prepare_inputs_for_generation"
PATCHES = ("image_patches", "image_patches_indices")
record = recorder(__name__)


def install(patcher: Any) -> None:
    patcher.require(TARGET, "input_ids", "past_key_values", "image_patches", "image_patches_indices")
    patcher.wrap(TARGET, _prepare_inputs)


def _prepare_inputs(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    inputs = wrapped(*args, **kwargs)
    given = {name: kwargs.get(name) for name in PATCHES}
    if not isinstance(inputs, dict) or given["image_patches"] is None or inputs.get("image_patches") is not None:
        return inputs
    position = kwargs.get("cache_position", inputs.get("cache_position"))
    if getattr(position, "numel", lambda: 0)() == 0 or int(position.reshape(-1)[0]) != 0:
        return inputs  # a decoding step (the image is in the cache), or no position to tell: upstream's
    record.changed("the image patches given back to the prompt's forward (cache_position starts at 0)")
    return {**inputs, **{name: value for name, value in given.items() if value is not None}}
