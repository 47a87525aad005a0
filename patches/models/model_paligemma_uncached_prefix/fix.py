"""model-paligemma-uncached-prefix: PaliGemma ``generate(use_cache=False)`` reads its generated tokens as part of the
bidirectional image + prompt prefix (silently wrong from the second token; 4.46-5.17, fixed upstream in 5.18).

The defect. PaliGemma's text model sees the prefix (image tokens and the prompt) bidirectionally and the generated
suffix causally. Without a cache every step re-feeds the whole sequence, and the prefix is taken too wide:

- 4.46-4.57: outside training ``_update_causal_mask`` reads no token types and makes a forward's whole input the
  prefix (``causal_mask[:, :sequence_length] = 0``), so from step 1 the generated tokens see each other both ways;
- 5.0-5.17: the mask follows ``token_type_ids`` (0 = prefix), and the generic ``_update_model_kwargs_for_generation``
  extends them with the prompt's last value (0), so the generated tokens join the prefix.

5.18 overrides ``_update_model_kwargs_for_generation`` on PaliGemma to give the generated tokens type 1 (suffix).
Cached generation is right on every release (the prompt is one forward, each new token a causal query).

Detection. ``doctor --sweep``'s image-uncached scenario on a tiny PaliGemma: greedy ``generate(use_cache=False)``,
every step against a no-cache forward whose mask is the prefix-LM written out (prompt both ways, generated tokens
causal).

Correction. Only for ``use_cache=False`` calls. ``_update_model_kwargs_for_generation`` (wrapped for PaliGemma) gives
the generated tokens type 1 as 5.18 does, and on 4.x records the prompt's length in that call's ``model_kwargs``
(never process-wide); PaliGemma's ``prepare_inputs_for_generation`` takes that value out and, on 4.x, replaces the
2-D mask with the prefix-LM 4-D mask (columns of the prompt visible to every row, later columns causal, padding
hidden). Cached generation, the first step and calls without a 2-D mask are upstream's.
"""

from __future__ import annotations

from typing import Any

PATCH = "model-paligemma-uncached-prefix"
MODULE = "transformers.models.paligemma.modeling_paligemma"
UPDATE = f"{MODULE}:PaliGemmaForConditionalGeneration._update_model_kwargs_for_generation"
PREPARE = f"{MODULE}:PaliGemmaForConditionalGeneration.prepare_inputs_for_generation"
# the prompt's width (columns, padding included), kept in one generate() call's model_kwargs
PROMPT_KEY = "_hf_genfix_paligemma_prompt_len"


def install(patcher: Any) -> None:
    patcher.require(UPDATE, "outputs", "model_kwargs")
    patcher.require(PREPARE, "input_ids")
    patcher.wrap(UPDATE, _update_model_kwargs)
    patcher.wrap(PREPARE, _prepare_inputs)


def _builds_mask_from_token_types() -> bool:
    import importlib

    # 5.x: create_causal_mask_mapping reads token_type_ids without a cache; 4.x reads none outside training
    return hasattr(importlib.import_module(MODULE), "create_causal_mask_mapping")


def _update_model_kwargs(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    model_kwargs = kwargs.get("model_kwargs", args[1] if len(args) > 1 else None)
    if not isinstance(model_kwargs, dict) or model_kwargs.get("use_cache", True) is not False:
        return wrapped(*args, **kwargs)
    types = model_kwargs.get("token_type_ids")
    mask = model_kwargs.get("attention_mask")
    out = wrapped(*args, **kwargs)
    import torch

    grown = out.get("token_type_ids")
    if types is not None and grown is not None and grown.shape[1] > types.shape[1]:
        # a generated token belongs to the causal suffix (type 1), as 5.18 has it
        out["token_type_ids"] = torch.cat([types, types.new_ones((types.shape[0], grown.shape[1] - types.shape[1]))],
                                          dim=-1)
    if not _builds_mask_from_token_types() and PROMPT_KEY not in out:
        if getattr(mask, "dim", lambda: 0)() == 2:
            out[PROMPT_KEY] = mask.shape[1]
    return out


def _prepare_inputs(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if PROMPT_KEY not in kwargs:
        return wrapped(*args, **kwargs)
    kwargs = dict(kwargs)
    prompt = kwargs.pop(PROMPT_KEY)
    inputs = wrapped(*args, **kwargs)
    mask2d = kwargs.get("attention_mask")
    if (kwargs.get("use_cache", True) is not False or kwargs.get("past_key_values") is not None
            or getattr(mask2d, "dim", lambda: 0)() != 2 or not isinstance(inputs, dict)
            or getattr(inputs.get("attention_mask"), "dim", lambda: 0)() != 2):
        return inputs
    inputs = dict(inputs)
    inputs["attention_mask"] = _prefix_lm_mask(mask2d, prompt, instance.dtype)
    return inputs


def _prefix_lm_mask(mask2d: Any, prompt: int, dtype: Any) -> Any:
    """Additive (batch, 1, L, L) mask: every row sees the prompt's columns, later columns causally; padding hidden
    (a padding row sees itself, so no row is empty)."""
    import torch

    width = mask2d.shape[1]
    device = mask2d.device
    visible = torch.ones(width, width, dtype=torch.bool, device=device).tril()
    visible[:, :prompt] = True
    visible = visible[None, :, :] & mask2d.bool()[:, None, :]
    visible |= torch.eye(width, dtype=torch.bool, device=device)[None] & ~mask2d.bool()[:, :, None]
    out = torch.zeros(mask2d.shape[0], 1, width, width, dtype=dtype, device=device)
    return out.masked_fill_(~visible[:, None], torch.finfo(dtype).min)
