"""model-lfm2-conv-continuation / model-lfm2-moe-conv-continuation (one patch per model, one fix): LFM2's short
convolution layers lose the cached convolution window for several tokens after a cache, so a second turn from
generate()'s returned cache, a reused prefix cache, a chunk after a cache, chunked prefill and assisted decoding's
drafts are silently wrong (LFM2 4.54.0, where it first ships, to 5.14.1; LFM2-MoE 5.0.0, where it first ships, to
5.14.1; 5.15.0 rewrote the layer and is right).

The defect. ``Lfm2ShortConv.forward`` (LFM2-MoE's is the same code) has two paths: a prompt's (the whole sequence
through ``nn.Conv1d``, zero-padded on the left) and a decoding step's (the cached window of ``conv_L_cache`` columns
rolled by one, the new column written, one output from the window). Which one runs is keyed on the cache alone --
``cache_position[0] > 0`` up to 5.3, the cache's ``has_previous_state`` from 5.4 -- never on how many tokens come.
So several tokens after a cache take the one-token path: the window is advanced once (4.54-5.3 write all the tokens
into the clamped last column; 5.4-5.14 append them and keep the last ``conv_L_cache``), ONE output is computed from
it and broadcast over every token of the chunk. Every such token's output is wrong, and so is the window the next
step starts from. The sweep found it once its tiny LFM2 held a convolution layer (session 27): 4.54.0, 4.57.6 and
5.2.0 chunk-after-cache 0.253, second turn 7.05, assisted decoding with 4-token drafts 0.126; 5.5.0 and 5.12.0
prefix-cache reuse 0.249 and chunked prefill 0.029; LFM2-MoE second turn 7.68 on 5.2.0, prefix reuse 0.776.
5.15.0 concatenates the cached window with the chunk and convolves the whole (``update_conv_state(...,
conv_kernel_size=...)``).

Detection. Each patch's ``probe()``: a first turn generated, then a second turn of three more tokens continuing from
the returned cache, every step against a no-cache forward of the conversation (the loud tiny model of the
continuation probes).

Correction (``split_after_window``). Several tokens after a cache go through upstream's own one-token path one at a
time, each with its own ``cache_position`` and no mask (a decoding step's: the layer masks nothing for one token),
and the outputs are concatenated; the window each step leaves is the one the next one reads, as in decoding. What
stays upstream's: a prompt (no window yet), one token, ``cache_position`` missing where the release keys on it, packed
sequences (``seq_idx``), and a layer that records its past for a rollback (5.14's ``record_past``). A padded batch's
pads in such a chunk are zeroed before the convolution, token by token, as the prompt's path zeroes them on 5.x
(``apply_mask_to_padding_states``, for more than one row); the layer is not handed that mask on every release
(4.54-4.57 give it the 4-D attention mask, 5.13-5.14 none once the window exists), so the backbone's forward
(``keep_chunk_mask``) lends it the chunk's columns for the call. 4.54-4.57's layer never masks at all: there a chunk
with pads, and every later chunk of that cache, stays upstream's (where a pad belongs in the window is a guess).

Assisted decoding is refused on 4.54-5.12 (``refuse_assisted``): the convolution window cannot be rolled back when
drafts are rejected (the cache crops only its attention layers), so the next step reads a window that holds tokens
the answer does not; no split can make that right. Upstream 5.13 refuses it too (``_is_stateful``), and 5.15 rolls
the window back (``record_past``).
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import PADS_AFTER_STATE, has_state
from hf_genfix.toolkit import cache_argument, env_name, hidden_from_warnings, recorder, signature

MIXERS = {
    "lfm2": "transformers.models.lfm2.modeling_lfm2:Lfm2ShortConv.forward",
    "lfm2_moe": "transformers.models.lfm2_moe.modeling_lfm2_moe:Lfm2MoeShortConv.forward",
}
BACKBONES = {
    "lfm2": "transformers.models.lfm2.modeling_lfm2:Lfm2Model.forward",
    "lfm2_moe": "transformers.models.lfm2_moe.modeling_lfm2_moe:Lfm2MoeModel.forward",
}
MODELS = {
    "lfm2": "transformers.models.lfm2.modeling_lfm2:Lfm2PreTrainedModel",
    "lfm2_moe": "transformers.models.lfm2_moe.modeling_lfm2_moe:Lfm2MoePreTrainedModel",
}
ASSISTED = "transformers.generation.utils:GenerationMixin._assisted_decoding"
# An attribute of the cache for the length of one backbone call: the fed chunk's columns of a 2-D mask with pads.
CHUNK_MASK = "_hf_genfix_chunk_mask"
# The names the cache arrives under: ``past_key_value`` on 4.54-4.55, ``past_key_values`` from 4.56.
CACHE_KEYWORDS = ("past_key_values", "past_key_value")
# A fix that installs the split says so as its ``NOT_BITWISE`` (the sweep's rounding verdict reads it).
NOT_BITWISE = ("several tokens after a cache go through the convolution's one-token path one at a time, where "
               "upstream computes one output for the whole chunk: where upstream happens to be right (a window the "
               "chunk does not change), other float operations")


class Lfm2AssistedUnsupported(ValueError):
    """Assisted decoding of an LFM2 model on a release whose cache cannot roll its convolution window back."""


def install(patcher: Any, model_type: str) -> None:
    from hf_genfix import Drift

    mixer = patcher.require(MIXERS[model_type], "hidden_states", "attention_mask")
    if not set(CACHE_KEYWORDS) & set(signature(mixer).parameters):
        raise Drift(f"{MIXERS[model_type]} takes no past_key_values")
    patcher.require(BACKBONES[model_type], "input_ids", "attention_mask")
    record = recorder(patcher.patch_id)  # functions, not functools.partial: the patcher hides each wrapper's code
    patcher.wrap(MIXERS[model_type], lambda wrapped, instance, args, kwargs:
                 split_after_window(wrapped, instance, args, kwargs, record))
    patcher.wrap(BACKBONES[model_type], keep_chunk_mask)
    model = patcher.require(MODELS[model_type])
    if not getattr(model, "_is_stateful", False):  # from 5.13 upstream refuses assisted decoding itself
        patcher.require(ASSISTED)
        patcher.wrap(ASSISTED, lambda wrapped, instance, args, kwargs:
                     refuse_assisted(wrapped, instance, args, kwargs, model, record))


@hidden_from_warnings
def split_after_window(wrapped: Any, instance: Any, args: tuple, kwargs: dict, record: Any = None) -> Any:
    """The short convolution: several tokens after a cache go through upstream's one-token path, one at a time."""
    import torch

    if record is not None and record.on:
        record.seen()

    hidden = args[0] if args else kwargs.get("hidden_states")
    if not isinstance(hidden, torch.Tensor) or hidden.dim() != 3 or hidden.shape[1] < 2:
        return wrapped(*args, **kwargs)
    bound = signature(wrapped).bind(*args, **kwargs)
    arguments = bound.arguments
    cache = cache_argument(arguments, CACHE_KEYWORDS)
    layer = getattr(instance, "layer_idx", None)
    if cache is None or layer is None or arguments.get("seq_idx") is not None:
        return wrapped(*args, **kwargs)
    n = hidden.shape[1]
    positions = arguments.get("cache_position")
    if "cache_position" in signature(wrapped).parameters:  # 4.54-5.3: upstream keys its one-token path on it
        if (not isinstance(positions, torch.Tensor) or positions.dim() != 1 or positions.shape[0] != n
                or int(positions[0]) <= 0):
            return wrapped(*args, **kwargs)
    elif not has_state(cache, layer):
        return wrapped(*args, **kwargs)
    if _records_past(cache, layer) or getattr(cache, PADS_AFTER_STATE, False):
        return wrapped(*args, **kwargs)
    mask = arguments.get("attention_mask")
    if isinstance(mask, torch.Tensor) and mask.dim() == 2:  # 5.0-5.12: the mask of the whole sequence so far
        if mask.shape[-1] < n:
            return wrapped(*args, **kwargs)
        chunk_mask = mask[:, -n:]
    elif mask is None or (isinstance(mask, torch.Tensor) and mask.dim() == 4):
        chunk_mask = getattr(cache, CHUNK_MASK, None)  # the backbone's, for this call
        if not isinstance(chunk_mask, torch.Tensor) or tuple(chunk_mask.shape) != (hidden.shape[0], n):
            chunk_mask = None
    else:
        return wrapped(*args, **kwargs)
    pads = chunk_mask is not None and not bool((chunk_mask == 1).all())
    if pads and mask is not None and mask.dim() == 4:
        # 4.54-4.57: the layer never masks (the 4-D mask is the attention's), so where a pad in a chunk belongs in
        # the window is the caller's guess: upstream's, and so is every later chunk of this cache (split alone, they
        # would continue from upstream's window for this one: another wrong answer, not a right one).
        try:
            setattr(cache, PADS_AFTER_STATE, True)
        except AttributeError:
            pass
        return wrapped(*args, **kwargs)
    # 5.x: the prompt's path zeroes a padded batch's pads before the convolution (apply_mask_to_padding_states, for
    # more than one row); each token of the split gets the same, as the whole chunk would in a no-cache forward.
    zero = pads and hidden.shape[0] > 1
    if record is not None and record.on:
        record.changed("%d tokens after a cache split through the one-token path (layer %d)", n, layer)
    outputs = []
    for i in range(n):
        token = hidden[:, i:i + 1]
        arguments["hidden_states"] = (token * chunk_mask[:, i, None, None]).to(token.dtype) if zero else token
        if "attention_mask" in arguments:
            arguments["attention_mask"] = None  # a step's: one token is never masked by this layer
        if positions is not None:
            arguments["cache_position"] = positions[i:i + 1]
        outputs.append(wrapped(*bound.args, **bound.kwargs))
    return torch.cat(outputs, dim=1)


def keep_chunk_mask(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """The backbone: for the length of a call that feeds a padded chunk after a cache, the cache carries that chunk's
    columns of the 2-D mask (``CHUNK_MASK``) for the convolution layers, which are not handed them on every release
    (4.54-4.57 give them the 4-D attention mask, 5.13-5.14 nothing once the window exists)."""
    import torch

    bound = signature(wrapped).bind(*args, **kwargs).arguments
    cache = cache_argument(bound, CACHE_KEYWORDS)
    mask = bound.get("attention_mask")
    fed = bound.get("input_ids") if bound.get("input_ids") is not None else bound.get("inputs_embeds")
    if (cache is None or not isinstance(mask, torch.Tensor) or not isinstance(fed, torch.Tensor) or mask.dim() != 2
            or fed.dim() < 2 or fed.shape[1] < 2 or mask.shape[-1] < fed.shape[1]
            or bool((mask[:, -fed.shape[1]:] == 1).all()) or not _holds_tokens(cache)):
        return wrapped(*args, **kwargs)
    try:
        setattr(cache, CHUNK_MASK, mask[:, -fed.shape[1]:])
    except AttributeError:
        return wrapped(*args, **kwargs)
    try:
        return wrapped(*args, **kwargs)
    finally:
        try:
            delattr(cache, CHUNK_MASK)
        except AttributeError:
            pass


def _holds_tokens(cache: Any) -> bool:
    try:
        return cache.get_seq_length() > 0
    except Exception:  # noqa: BLE001 - a cache that cannot say: the layers' own checks decide
        return False


def _records_past(cache: Any, layer: int) -> bool:
    layers = getattr(cache, "layers", None)
    if not isinstance(layers, (list, tuple)) or layer >= len(layers):
        return False
    return bool(getattr(layers[layer], "record_past", False))


@hidden_from_warnings
def refuse_assisted(wrapped: Any, instance: Any, args: tuple, kwargs: dict, model: type, record: Any) -> Any:
    """generate()'s assisted decoding (an assistant model, prompt lookup): refused for this model, before it runs."""
    if not isinstance(instance, model) or not _has_conv(instance):
        return wrapped(*args, **kwargs)
    import transformers

    if record.on:
        record.changed("refused: assisted decoding of %s", type(instance).__name__)

    raise Lfm2AssistedUnsupported(
        f"hf_genfix: {type(instance).__name__}: assisted decoding (assistant_model, prompt_lookup_num_tokens) is "
        f"silently wrong on transformers {transformers.__version__}: rejected draft tokens stay in the short "
        f"convolution's cached window, which the cache cannot roll back. Generate without an assistant, upgrade to "
        f"transformers 5.15 or later (which rolls the window back), or set "
        f"{env_name(record.patch_id)}=off for upstream's output.")


def _has_conv(model: Any) -> bool:
    """Whether the model has a short-convolution layer (its config's ``layer_types``, on every release it ships)."""
    from hf_genfix.helpers.sliding_window import text_config

    return "conv" in (getattr(text_config(getattr(model, "config", None)), "layer_types", None) or ())
