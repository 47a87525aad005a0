"""What the continuation patches of the pure state-space models share (``model-mamba-continuation``,
``model-falcon-mamba-continuation``): a cache that holds only recurrent states (5.x's ``LinearAttentionLayer``s),
continued with more than one token.

Two things go wrong upstream, and the three wrappers here put them right:

- The mixer (``split_after_state``). Its one-token path reads and advances both states (the convolution window and
  the SSM state); its "anything else" path, written for a prompt, continues the convolution from the cached window
  but starts the selective scan from a zero state. So several tokens after a cache that holds a state (a second turn,
  a prefix cache reused, a chunk) lose everything the SSM state remembered. The wrapper feeds such a chunk to
  upstream's own forward one token at a time (the decoding path, exactly) and concatenates the outputs. A prompt (no
  state yet), one token and a cache recording its past for assisted decoding are upstream's. A chunk with pads is
  split only where they are a left-padded batch's, in rows whose states are still all zeros (a chunked prefill: the
  row held only pads so far; each pad puts the row's state back to zeros, as upstream's prompt path masks it).
  Pads anywhere else (where a pad belongs in a recurrence is the caller's guess, not ours) are upstream's, and so
  is every later chunk of that cache (split alone, they would give another wrong answer, not a right one).
- generate() (``slice_continuation`` + ``count_fed``). generate() slices the ids it is given by the cache's length
  (its contract: the whole conversation, or only the new tokens with a mask of the whole): a cache of recurrent
  states has no length (``get_seq_length`` raises), so upstream feeds the whole conversation on top of the state
  that already holds its start. The backbone's forward is wrapped to count, on the cache object itself (so that
  ``copy.deepcopy`` carries it), the columns fed into it since it was empty; the model's
  ``prepare_inputs_for_generation`` then slices a first iteration's ids to the columns past that count, as it would
  for an attention cache of that length. A cache whose count is unknown (filled while hf_genfix was off), ids no
  longer than the count, or a mask that does not cover the ids are upstream's.
"""

from __future__ import annotations

import functools
from typing import Any

from hf_genfix.toolkit import Recorder, cache_argument, hidden_from_warnings, recorder, signature

COUNT = "_hf_genfix_columns_fed"  # an attribute of the cache: the columns of input fed into its states so far
PADS_AFTER_STATE = "_hf_genfix_pads_after_state"  # an attribute of the cache: a chunk after a state held pads
# The names the cache arrives under: ``cache`` from 5.24, ``cache_params`` before (and, deprecated, in **kwargs).
CACHE_KEYWORDS = ("cache", "cache_params")
# A fix that installs ``split_after_state`` says so as its ``NOT_BITWISE`` (the sweep's rounding verdict reads it).
SPLIT_NOT_BITWISE = ("several tokens after a state go through the mixer's one-token path one at a time, where "
                     "upstream scans them as one chunk from a zero state: a different order of float operations, "
                     "even where the lost state is too small to matter")


def install_continuation(patcher: Any, mixer: str | None, backbone: str | None = None,
                         prepare: str | None = None, own_cache: type | None = None) -> None:
    """Wrap one model's mixer where its chunk path forgets the state (not Mamba-2's, which scans from the cached
    state) and, for a model whose cache holds recurrent states only, its backbone and prepare_inputs_for_generation
    (a hybrid's cache has attention layers: generate() slices by their length). The cache argument is ``cache``
    from 5.24 (``cache_params`` before; 5.24 still takes that name through a deprecation wrapper). ``own_cache``:
    the model's own cache class where this release still has one (5.4's ``Mamba2Cache``), a class its fix knows to
    hold recurrent states only; without it, only a generic cache of linear layers is sliced by."""
    from hf_genfix import Drift

    targets = ((mixer, ("hidden_states", "attention_mask")), (backbone, ("input_ids", "inputs_embeds")),
               (prepare, ("input_ids", "is_first_iteration")))
    for target, params in targets:
        if target is None:
            continue
        value = patcher.require(target, *params)
        if not set(CACHE_KEYWORDS) & set(signature(value).parameters):
            raise Drift(f"{target} takes neither cache nor cache_params")
    # Each wrapper is a function, not a functools.partial (the patcher hides each wrapper's code from warnings'
    # stacklevel), closing over the installing patch's recorder: its pass-through paths say so (``unchanged()``).
    record = recorder(patcher.patch_id)
    if mixer is not None:
        patcher.wrap(mixer, lambda wrapped, instance, args, kwargs:
                     split_after_state(wrapped, instance, args, kwargs, record))
    if backbone is not None and prepare is not None:
        patcher.wrap(backbone, lambda wrapped, instance, args, kwargs:
                     count_fed(wrapped, instance, args, kwargs, record))
        recurrent = (own_cache,) if own_cache is not None else ()
        patcher.wrap(prepare, lambda wrapped, instance, args, kwargs:
                     slice_continuation(wrapped, instance, args, kwargs, recurrent, record))


def has_state(cache: Any, layer: Any = None) -> bool:
    flag = getattr(cache, "has_previous_state", None)
    if isinstance(flag, bool):  # before 5.17: the hybrid caches' one flag for every layer, set after the prompt
        return flag
    if not callable(flag):
        return False
    try:
        if layer is not None and _takes_arguments(flag):
            return bool(flag(layer))
        # No layer, or a cache whose has_previous_state() asks nothing (OlmoHybrid 5.3-5.14, Qwen3-Next before 5.5):
        # "the last linear layer holds a state", which a later layer's mixer reads the same way.
        return bool(flag())
    except (ValueError, IndexError, TypeError):
        return False


def _takes_arguments(method: Any) -> bool:
    try:
        return bool(signature(method).parameters)
    except (TypeError, ValueError):
        return True


@hidden_from_warnings
def split_after_state(wrapped: Any, instance: Any, args: tuple, kwargs: dict, record: Recorder) -> Any:
    """The mixer: several tokens after this layer's state go through upstream's one-token path, one at a time."""
    import torch

    hidden = args[0] if args else kwargs.get("hidden_states")
    if hidden is None or hidden.dim() != 3 or hidden.shape[1] < 2:
        return record.through(wrapped, args, kwargs)
    bound = signature(wrapped).bind(*args, **kwargs)
    cache = cache_argument(bound.arguments, CACHE_KEYWORDS)
    layer = getattr(instance, "layer_idx", None)
    if cache is None or layer is None or not has_state(cache, layer):
        return record.through(wrapped, args, kwargs)
    recording = getattr(cache, "is_recording_past", None)
    if callable(recording) and recording(layer):
        return record.through(wrapped, args, kwargs)
    n = hidden.shape[1]
    mask = bound.arguments.get("attention_mask")
    # The mask the mixer is given: of the fed tokens (5.17 on), or of the whole sequence so far (Zamba before 5.17,
    # whose decode steps get the mask up to their token: with its hybrid cache's one has_previous_state flag up to
    # 5.4, and with the generic per-layer cache on 5.5-5.16 -- keyed on the flag alone, 5.12.0's second turn stayed
    # wrong by 5.13; a 5.17+ mixer given a wider mask is upstream's, bitwise). A left-padded batch's pads lie in the
    # columns before the cached ones there, and its second turn is split like a single row's (7.78 -> 7.6e-05 on
    # 5.11-5.14; until session 21 such a batch was left to upstream). Either way the fed tokens' columns must all be
    # ones, or be the left pads of rows with nothing in their state yet (``_leading_pads_of_empty_rows``): any other
    # pad has no place in a recurrence that we could know, and stays upstream's (PADS_AFTER_STATE).
    legacy = isinstance(getattr(cache, "has_previous_state", None), bool) or _before_5_17()
    if mask is not None and (mask.dim() != 2 or mask.shape[-1] < n or (mask.shape[-1] != n and not legacy)):
        return record.through(wrapped, args, kwargs)
    if getattr(cache, PADS_AFTER_STATE, False):
        return record.through(wrapped, args, kwargs)  # an earlier chunk after a state held pads: upstream's on
    fed = None if mask is None else mask[:, -n:]
    if fed is not None and not bool((fed == 1).all()) and not _leading_pads_of_empty_rows(cache, layer, fed):
        # Pads among the fed tokens after a state, where a pad's place in the recurrence would be a guess: upstream's.
        # The cache is marked so that its later chunks are upstream's too: splitting those alone would continue from
        # upstream's state for this chunk and give another wrong answer than upstream's (a left-padded batch
        # prefilled in chunks: Jamba on 5.24.0, 0.0024 against upstream's 0.0031), never a right one.
        try:
            setattr(cache, PADS_AFTER_STATE, True)  # read by this wrapper alone: upstream's code never sees it
        except AttributeError:
            pass
        return record.through(wrapped, args, kwargs)
    outputs = []
    for i in range(n):
        bound.arguments["hidden_states"] = hidden[:, i:i + 1]
        if mask is not None:
            # each token gets the mask its decode step would have had: its own column, or every column up to it
            width = mask.shape[-1]
            bound.arguments["attention_mask"] = mask[:, i:i + 1] if width == n else mask[:, :width - n + i + 1]
        outputs.append(wrapped(*bound.args, **bound.kwargs))
        if fed is not None and not bool(fed[:, i].all()):
            # A left pad of a row that holds no state yet: the one-token path does not mask it, so that row's
            # state goes back to the zeros it had, as if the pad were not there (its output is a pad's: unread).
            pads = fed[:, i] == 0
            for state in _state_tensors(cache, layer, hidden.shape[0]) or ():
                state[pads.to(state.device)] = 0
    return torch.cat(outputs, dim=1)


def _leading_pads_of_empty_rows(cache: Any, layer: int, fed: Any) -> bool:
    """Whether the fed chunk's pads are a left-padded batch's, each where nothing has entered the row's state yet:
    in every row with a pad, the fed mask is pads then ones, and the layer's states of that row are all zeros
    (upstream's prompt path masks a padded row's pads to zero, so an empty row is one that held only pads so far:
    a fresh start, the unpadded row's). Read where the cache's layout is one we know (``_state_tensors``); anything
    else is a guess, left to upstream (a chunked prefill of a left-padded batch: Zamba on 5.5-5.14 was 3.6e-4 off on
    the sweep's tame model)."""
    padded = (fed == 0).any(dim=-1)
    if bool((fed[:, 1:] < fed[:, :-1]).any()) or not bool(((fed == 0) | (fed == 1)).all()):
        return False  # a pad after a token of the same row, or a mask of weights: not a left pad
    states = _state_tensors(cache, layer, fed.shape[0])
    if not states:
        return False
    return all(not bool(state[padded.to(state.device)].any()) for state in states)


def _state_tensors(cache: Any, layer: int, batch: int) -> list | None:
    """This layer's state tensors, batch first, in the layouts we know: a layer object of ``cache.layers`` with
    ``conv_states`` and ``recurrent_states`` (5.5 on: one tensor each, or one per state from 5.24), or a hybrid
    cache's per-layer lists ``conv_states`` / ``ssm_states`` (before). None where neither is there or a tensor is
    not of this batch."""
    import torch

    layers = getattr(cache, "layers", None)
    if isinstance(layers, (list, tuple)) and 0 <= layer < len(layers):
        values = [getattr(layers[layer], name, None) for name in ("conv_states", "recurrent_states")]
    else:
        values = []
        for name in ("conv_states", "ssm_states"):
            held = getattr(cache, name, None)
            values.append(held[layer] if isinstance(held, (list, tuple)) and 0 <= layer < len(held) else None)
    found = []
    for value in values:
        parts = list(value.values()) if isinstance(value, dict) else list(value) \
            if isinstance(value, (list, tuple)) else [value]
        found += [t for t in parts if isinstance(t, torch.Tensor)]
    if len(found) < 2 or any(t.dim() < 2 or t.shape[0] != batch for t in found):
        return None  # a conv window and a recurrent state, at least, each batch first
    return found


@functools.lru_cache(maxsize=None)
def _before_5_17() -> bool:
    """Whether the installed release hands a Mamba mixer the mask of the whole sequence (before 5.17)."""
    import transformers
    from packaging.version import Version

    return Version(Version(transformers.__version__).base_version) < Version("5.17.0")


@hidden_from_warnings
def count_fed(wrapped: Any, instance: Any, args: tuple, kwargs: dict, record: Recorder) -> Any:
    """The backbone: after the call, the cache's count is the columns fed since it held no state. Always the
    caller's call and upstream's answer (``unchanged()``): the count is an attribute only ``slice_continuation``
    reads, and that wrapper says itself where it changes a call."""
    record.unchanged()
    bound = signature(wrapped).bind(*args, **kwargs)
    ids, embeds = bound.arguments.get("input_ids"), bound.arguments.get("inputs_embeds")
    fed = ids.shape[1] if ids is not None else embeds.shape[1] if embeds is not None else None
    cache = cache_argument(bound.arguments, CACHE_KEYWORDS)
    before = None
    if cache is not None and has_state(cache):
        before = getattr(cache, COUNT, None)  # None: filled where nobody counted; stays unknown
    elif cache is not None or fed is not None:
        before = 0
    out = wrapped(*args, **kwargs)
    if fed is None or before is None:
        return out
    if cache is None:  # the backbone made the cache: it is in the output
        from hf_genfix.helpers.decode import cache_from_outputs

        cache = cache_from_outputs(out) if not isinstance(out, tuple) else None
        if cache is None:
            cache = getattr(out, "cache_params", None)
    if cache is not None and has_state(cache):
        try:
            setattr(cache, COUNT, before + int(fed))
        except AttributeError:  # a cache class with __slots__: the count stays unknown
            pass
    return out


@hidden_from_warnings
def slice_continuation(wrapped: Any, instance: Any, args: tuple, kwargs: dict, recurrent: tuple,
                       record: Recorder) -> Any:
    """The model's prepare_inputs_for_generation: a first iteration over a cache that holds a state feeds only the
    columns the cache has not seen, as generate() does for an attention cache of that length (``recurrent``: the
    model's own cache classes that hold recurrent states only)."""
    bound = signature(wrapped).bind(*args, **kwargs)
    extra = bound.arguments.get("kwargs") or {}
    ids = bound.arguments.get("input_ids")
    cache = cache_argument(bound.arguments, CACHE_KEYWORDS)
    first = bound.arguments.get("is_first_iteration", extra.get("is_first_iteration"))
    if (ids is None or cache is None or not first or extra.get("next_sequence_length") is not None
            or bound.arguments.get("inputs_embeds") is not None or not _all_linear(cache, recurrent)
            or not has_state(cache)):
        return record.through(wrapped, args, kwargs)
    seen = getattr(cache, COUNT, None)
    mask = bound.arguments.get("attention_mask")
    if seen is None or ids.shape[1] <= seen or (mask is not None and mask.shape[-1] != ids.shape[1]):
        return record.through(wrapped, args, kwargs)
    new = ids.shape[1] - seen
    inputs = wrapped(*args, **dict(kwargs, next_sequence_length=new))
    fed_mask = inputs.get("attention_mask")
    if fed_mask is not None and fed_mask.dim() == 2 and fed_mask.shape[-1] == ids.shape[1]:
        inputs["attention_mask"] = fed_mask[:, -new:]  # the mixer masks the tokens it is fed
    return inputs


def _all_linear(cache: Any, recurrent: tuple = ()) -> bool:
    """Whether every layer of the cache holds recurrent states only (no attention layer that generate() could
    slice by). ``Cache.is_linear`` says so from 5.13; 5.5-5.12 have the same layer classes without the property,
    so its definition is applied to them by class name (a linear-attention layer that is not also an attention
    layer). A model-specific cache (4.x, 5.0-5.4) is sliced by only where the fix names its class (``recurrent``):
    its layout is not read, so nothing is guessed."""
    if recurrent and type(cache) in recurrent:
        return True
    flags = getattr(cache, "is_linear", None)
    if flags is None:
        layers = getattr(cache, "layers", None)
        if not isinstance(layers, (list, tuple)):
            return False
        names = [{klass.__name__ for klass in type(layer).__mro__} for layer in layers]
        flags = [{"LinearAttentionCacheLayerMixin"} <= n and "CacheLayerMixin" not in n for n in names]
    try:
        return bool(flags) and all(flags)
    except TypeError:
        return False
