"""model-kosmos2-padded-positions: Kosmos-2 places every generated token of a left-padded row as if the pads were
tokens (silently wrong from the second generated token).

The defect. Kosmos-2's text model takes sinusoidal positions that start at ``pad_token_id + 1`` and skip the pads.
With no ``position_ids`` given, ``Kosmos2TextSinusoidalPositionalEmbedding`` makes them from the ids:
``(cumsum(ids != pad) + cache_length) * (ids != pad) + pad``. For the prompt (no cache) that counts each row's
real tokens. For a decoding step it adds ``cache_length``, the cache's width, which includes the left pads of
the shorter rows: a row with ``k`` pads gets every generated token ``k`` positions too far. From 4.54.0 on,
``Kosmos2TextForCausalLM.prepare_inputs_for_generation`` drops the ``position_ids`` the generic preparation
derives from the attention mask ("Kosmos2 has offset for position ids"), so nothing corrects it; up to 4.53 the
method computed the step's position from the full ids, and was right. Measured: the first generated token is
right, every later one of a padded row is off (max logit diff 0.22-0.26 on a tiny model) on 4.54.0, 4.57.6,
5.0.0 and 5.24.0; 4.46.3-4.53.3 pass. No upstream issue found.

Detection. A tiny Kosmos-2 (one-layer vision tower, 4 latent queries), two prompts of different lengths with
different images, left-padded, 5 greedy tokens: each row's every step against a no-cache forward of that row
alone with its image (``oracles.sweep.families``'s image-padded scenario).

Correction. ``Kosmos2TextForCausalLM.prepare_inputs_for_generation`` is wrapped: for a decoding step (fewer new
tokens than the 2-D attention mask is wide) of a batch whose mask holds a pad, it passes the positions the model
itself gives an unpadded row, counted over the row's real tokens: ``cumsum(mask) * mask + pad_token_id``, the last
columns. The prompt step, unpadded batches, 4-D masks and calls that give ``position_ids`` go to upstream as they
are.
"""

from __future__ import annotations

from typing import Any

TARGET = "transformers.models.kosmos2.modeling_kosmos2:Kosmos2TextForCausalLM.prepare_inputs_for_generation"


def install(patcher: Any) -> None:
    patcher.require(TARGET, "input_ids", "attention_mask")
    patcher.wrap(TARGET, _prepare_inputs)


def _prepare_inputs(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    inputs = wrapped(*args, **kwargs)
    mask = kwargs.get("attention_mask")
    pad = getattr(instance.config, "pad_token_id", None)
    if not isinstance(inputs, dict) or inputs.get("position_ids") is not None or pad is None:
        return inputs
    if getattr(mask, "dim", lambda: 0)() != 2 or bool(mask.all()):
        return inputs
    new = inputs.get("input_ids")
    if new is None:
        new = inputs.get("inputs_embeds")
    width = new.shape[1] if new is not None else mask.shape[1]
    if width >= mask.shape[1]:
        return inputs  # the prompt (or an uncached step): the ids-based positions skip the pads already
    real = mask.long()
    inputs = dict(inputs)
    inputs["position_ids"] = (real.cumsum(-1) * real + pad)[:, -width:]
    return inputs
