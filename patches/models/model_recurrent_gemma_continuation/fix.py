"""model-recurrent-gemma-continuation: from 5.4 on, RecurrentGemma's cache neither carries its recurrent state nor
always says its length: continuing a cache (a second turn from generate()'s returned cache, a prefix cache reused
through ``copy.deepcopy``, several tokens fed after a cache) is silently wrong, and on 5.18-5.22 so is a plainly
cached left-padded batch.

The defect. 5.4 moved RecurrentGemma's local attention into the generic ``DynamicCache``, so generate() returns a
cache of the conversation's length and a second turn feeds only the tokens after it (up to 5.3 the keys lived in the
modules too, and a continuation is refused: the forward takes no cache, or generate() returns none). The recurrent
blocks' state (the RG-LRU state and the convolution window) stayed in the modules. Three things go wrong:
(1) ``RecurrentGemmaRecurrentBlock.forward`` takes any call of more than one token for a prompt: it restarts the
convolution window from zeros (the RG-LRU state is kept), so several tokens after a cache lose the last three tokens'
convolution inputs (5.4.0-5.25.0); (2) the state belongs to the model's last call, not to the cache object: a deep
copy of a prompt's cache carries none, and a continuation from it reads whatever the last call left (another
continuation's) (5.4.0-5.25.0); (3) the cache's length and mask sizes must be its first attention layer's (the
recurrent blocks' cache layers stay empty): 5.4-5.17 bind both on the cache in the backbone's forward, 5.18 dropped
that, and 5.18-5.22 build every cache layer as a sliding-window attention layer, so the cache says 0 and the masks
are sized by its first, empty, layer (a left-padded batch attends to its pads from the second step on: 2.78; a
second turn raises); 5.24's ``Cache.get_seq_length`` skips to the first attention layer itself; 5.25's
linear-attention layers count their own tokens, so the cache says 0 again and generate() feeds a second turn's whole
conversation on top of the attention's cached keys. On the sweep's loud tiny model a second turn is off by 2.2 and a
reused prefix cache by 2.2 (max |logit diff| against a no-cache forward of the conversation, 5.25.0).

Detection. ``probe()``: a loud tiny RecurrentGemma (recurrent, recurrent and attention blocks): a plainly cached
left-padded batch of three rows; a first turn generated, then a second turn of three more tokens continuing from
the returned cache; a prefix cache reused through ``copy.deepcopy`` for two continuations; every step against a
no-cache forward of each unpadded row.

Correction. The cache becomes the carrier of the state, as a Mamba cache is: after every call of the backbone with a
cache, the blocks' states are recorded on that cache object with its length (references to the tensors the blocks
hold: they replace them, never write into them; ``copy.deepcopy`` copies them with the cache). A call that continues
a cache holding such a record of its own length first puts the recorded states back into the blocks, and each
recurrent block then takes several tokens one at a time through its own one-token path (the decoding path,
exactly). Where the cache's length is not its first attention layer's (5.18-5.22, 5.25), the backbone binds that
layer's length and mask sizes on the cache after the call, as 5.4-5.17 do. A cache without a record of its length
(filled while the patch was off, or changed since), a prompt, a call without a cache or with ``use_cache=False`` are
upstream's; a one-token step continuing the cache the blocks last wrote reads the states the blocks hold.
"""

from __future__ import annotations

import contextvars
import types
from typing import Any

from hf_genfix.helpers.decode import cache_length
from hf_genfix.toolkit import Drift, cache_argument, recorder, signature

MODULE = "transformers.models.recurrent_gemma.modeling_recurrent_gemma"
BACKBONE = f"{MODULE}:RecurrentGemmaModel.forward"
BLOCK = f"{MODULE}:RecurrentGemmaRecurrentBlock.forward"
STATE = "_hf_genfix_recurrent_gemma_state"  # on the cache: (its length, the blocks' (conv window, RG-LRU state))
ATTENTION_LAYER = "_hf_genfix_attention_layer"  # on the cache: the layer whose length is the cache's (5.25)
CACHE_KEYWORDS = ("past_key_values", "cache")  # "cache" from 5.24 (past_key_values through a deprecation wrapper)
NOT_BITWISE = ("several tokens after a cache go through the recurrent block's one-token path one at a time, where "
               "upstream runs them as a prompt from a zero convolution window: a different order of float operations")
record = recorder(__name__)

# Set for the duration of one backbone call that continues a cache whose states were put back: its recurrent blocks
# then split a chunk. A context variable: another thread's (or task's) calls never see it.
_AFTER_STATE: contextvars.ContextVar[bool] = contextvars.ContextVar("hf_genfix_recurrent_gemma_after_state",
                                                                    default=False)


def install(patcher: Any) -> None:
    backbone = patcher.require(BACKBONE, "input_ids", "inputs_embeds", "use_cache")
    if not set(CACHE_KEYWORDS) & set(signature(backbone).parameters):
        raise Drift(f"{BACKBONE} takes neither past_key_values nor cache (before 5.4: no generic cache)")
    patcher.require(BLOCK, "input_states", "position_ids", "use_cache")
    patcher.wrap(BACKBONE, _carry_state)
    patcher.wrap(BLOCK, _split_after_state)


def _blocks(backbone: Any) -> list[Any]:
    """The recurrent blocks of the backbone, in order (the ones with an RG-LRU)."""
    layers = getattr(backbone, "layers", None) or ()
    return [layer.temporal_block for layer in layers
            if hasattr(getattr(layer, "temporal_block", None), "rg_lru")]


def _length(cache: Any) -> int | None:
    try:
        return cache_length(cache)
    except Exception:  # noqa: BLE001 - a cache that cannot say: no record, upstream's
        return None


def _carry_state(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """The backbone: put a continued cache's recorded states back, and record them on the cache after the call."""
    if record.on:
        record.seen()
    try:
        arguments = signature(wrapped).bind(*args, **kwargs).arguments
    except TypeError:
        return wrapped(*args, **kwargs)
    cache = cache_argument(arguments, CACHE_KEYWORDS)
    use_cache = arguments.get("use_cache")
    if use_cache is None:
        use_cache = getattr(getattr(instance, "config", None), "use_cache", False)
    if cache is None or not use_cache:
        return wrapped(*args, **kwargs)
    blocks = _blocks(instance)
    inputs = arguments.get("input_ids")
    if inputs is None:
        inputs = arguments.get("inputs_embeds")
    rows = int(inputs.shape[0]) if inputs is not None else None
    length = _length(cache)
    token = None
    if length:
        saved = getattr(cache, STATE, None)
        if _matches(saved, length, rows, len(blocks)):
            for block, (conv, state) in zip(blocks, saved[1]):
                block.conv1d_state = conv
                block.rg_lru.recurrent_states = state
            token = _AFTER_STATE.set(True)
            if record.on and inputs is not None and inputs.shape[1] > 1:
                record.changed("%d tokens continue a cache of %d: its recorded states, one token at a time",
                               inputs.shape[1], length)
    try:
        out = wrapped(*args, **kwargs)
    finally:
        if token is not None:
            _AFTER_STATE.reset(token)
    _count_by_attention(cache, instance)
    after = _length(cache)
    states = [(getattr(b, "conv1d_state", None), getattr(b.rg_lru, "recurrent_states", None)) for b in blocks]
    if after and all(conv is not None and state is not None for conv, state in states):
        try:
            setattr(cache, STATE, (after, states))
        except AttributeError:  # a cache class with __slots__: no record, continuations stay upstream's
            pass
    return out


def _count_by_attention(cache: Any, backbone: Any) -> None:
    """Make the cache's length and mask sizes its first attention layer's where its length says otherwise.

    RecurrentGemma's recurrent layers leave their cache layers empty. 5.4-5.17 bind ``get_seq_length`` and
    ``get_mask_sizes`` on the cache in the backbone's forward, to its first attention layer; 5.18 dropped that, and
    5.18-5.22 build every cache layer as a sliding-window attention layer, so the cache says 0 and the masks are
    sized by the first, empty, layer (a left-padded batch's pads are attended from the second step on; a second
    turn raises); 5.24's ``Cache.get_seq_length`` skips to the first attention layer itself; 5.25's linear-attention
    layers count their own tokens, so its length is its first layer's, 0. The same binding as 5.4-5.17's, after the
    call, on the cache object (``copy.deepcopy`` rebinds it to the copy), where the length disagrees."""
    layers = getattr(cache, "layers", None)
    index = next((i for i, layer in enumerate(getattr(backbone, "layers", None) or ())
                  if not hasattr(getattr(layer, "temporal_block", None), "rg_lru")), None)
    if index is None or not isinstance(layers, (list, tuple)) or index >= len(layers):
        return
    try:
        if int(cache.get_seq_length()) == int(layers[index].get_seq_length()):
            return
        setattr(cache, ATTENTION_LAYER, index)
        cache.get_seq_length = types.MethodType(_attention_length, cache)
        if hasattr(layers[index], "get_mask_sizes"):
            cache.get_mask_sizes = types.MethodType(_attention_mask_sizes, cache)
    except Exception:  # noqa: BLE001 - a cache that cannot say, or takes no attribute: upstream's
        return


def _attention_length(self: Any, layer_idx: int = 0) -> int:
    """The cache's length: its first attention layer's (another layer's own where one is named)."""
    index = getattr(self, ATTENTION_LAYER)
    return int(self.layers[index if layer_idx == 0 else layer_idx].get_seq_length())


def _attention_mask_sizes(self: Any, query_length: int, layer_idx: int = 0) -> Any:
    """The mask sizes of the cache's first attention layer, whichever layer the mask is built for (5.17's)."""
    return self.layers[getattr(self, ATTENTION_LAYER)].get_mask_sizes(query_length)


def _matches(saved: Any, length: int, rows: int | None, blocks: int) -> bool:
    """Whether ``saved`` is a record of this cache at ``length`` for ``rows`` rows and ``blocks`` blocks."""
    if not (isinstance(saved, tuple) and len(saved) == 2 and saved[0] == length and len(saved[1]) == blocks):
        return False
    return rows is None or all(conv.shape[0] == rows and state.shape[0] == rows for conv, state in saved[1])


def _split_after_state(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """A recurrent block: several tokens after a put-back state go through its one-token path, one at a time."""
    if not _AFTER_STATE.get():
        return wrapped(*args, **kwargs)
    try:
        bound = signature(wrapped).bind(*args, **kwargs)
    except TypeError:
        return wrapped(*args, **kwargs)
    hidden, positions = bound.arguments.get("input_states"), bound.arguments.get("position_ids")
    if (hidden is None or hidden.dim() != 3 or hidden.shape[1] < 2 or positions is None
            or positions.shape[-1] != hidden.shape[1] or bound.arguments.get("use_cache", True) is False):
        return wrapped(*args, **kwargs)
    import torch

    outputs = []
    for i in range(hidden.shape[1]):
        bound.arguments["input_states"] = hidden[:, i:i + 1]
        bound.arguments["position_ids"] = positions[..., i:i + 1]
        outputs.append(wrapped(*bound.args, **bound.kwargs))
    if isinstance(outputs[0], tuple):  # 5.24+: (hidden states, None)
        return (torch.cat([o[0] for o in outputs], dim=1), *outputs[-1][1:])
    return torch.cat(outputs, dim=1)
