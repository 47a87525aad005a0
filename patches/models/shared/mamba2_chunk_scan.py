"""model-zamba2-chunk-scan / model-nemotron-h-chunk-scan: a Mamba-2 mixer's torch scan (no CUDA kernels) sums the
recurrence between chunks over the wrong axis: wrong past its first chunk, and after a cache (each fix's docstring
has its range).

The defect they share. ``torch_forward`` (the path taken without the ``mamba-ssm`` kernels: every CPU, and a GPU
without them) scans a prompt in chunks of ``config.chunk_size`` tokens and carries the SSM state from chunk to chunk
with ``decay_chunk`` (``[batch, heads, target chunk, source chunk]``)::

    result = (decay_chunk[..., None, None] * states_permuted[:, :, None, ...]).sum(dim=2)

The state entering chunk z is the sum over the source chunks c of ``decay[z, c] * states[c]`` (dim 3); upstream sums
over the target chunks (dim 2). With one chunk and no earlier state the two are equal, so a prompt of at most
``chunk_size`` tokens is right; a longer one gets every chunk after the first, and the SSM state it leaves in the
cache, silently wrong (the forward is not even causal: the first positions of a long forward differ from a forward of
those positions alone). And several tokens after a cache that holds the state take a path that does not continue it
(the one-token path reading the first token only, or the same chunk sum dropping the cached state). 5.15.0 moved both
models' scan into ``mamba2_chunk_scan``, which sums over the source chunks and continues from the cached state.

Correction. ``torch_forward`` is wrapped. Where upstream is right it is called untouched (one token; a prompt of at
most ``chunk_size`` tokens with no state yet), so its arithmetic there is bitwise upstream's. Otherwise the first
``chunk_size`` tokens of a prompt go through upstream's own chunk path (one chunk from a zero state, right), and the
rest -- or every token after a cached state -- through upstream's own one-token path, one at a time, exactly as
decoding goes, with the caller's cache or, for a forward without one, a private cache of the release's own layout
for this layer (so ``use_cache=False`` is right too). The outputs are concatenated. Left padding that reaches past
the first chunk, or that continues after a cached state in rows that have seen only pads (a left-padded batch
prefilled in chunks), is fed as upstream's chunk path treats a leading pad (its input masked, the row's SSM state
kept at zero); right padding, holes in the mask, pads after a row's real tokens, and a cache layout this module does
not know are upstream's. The cost: one mixer call per token past the first chunk (on the torch path only; the CUDA
kernels' path is not wrapped).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import has_state

from hf_genfix.toolkit import hidden_from_warnings, recorder, signature


@dataclass(frozen=True)
class _Spec:
    module: str  # the model's modeling module
    hybrid_cache: str  # the name of its hybrid cache class, where a release has one
    record: Any  # the fix's recorder
    replay_pads: bool  # whether a left pad past the first chunk is replayed (the one-token path masks as the chunk path)
    one_row: bool  # whether the one-token path takes one row only (a batch is split into rows where it has no cache)


def install(patcher: Any, module: str, mixer: str, hybrid_cache: str, patch_module: str,
            replay_pads: bool = True, one_row: bool = False) -> None:
    """Wrap ``module:mixer.torch_forward``; ``hybrid_cache`` names the model's own cache class (used where the release
    has it); ``patch_module`` is the fix's ``__name__`` (its recorder); ``replay_pads=False``: a left pad past the
    first chunk is upstream's (a mixer whose one-token path does not mask as its chunk path does); ``one_row=True``: a
    one-token path that cannot take a batch (a batch without a cache is scanned row by row, one with a cache is
    upstream's)."""
    target = f"{module}:{mixer}.torch_forward"
    patcher.require(target, "input_states", "cache_params", "attention_mask")
    spec = _Spec(module, hybrid_cache, recorder(patch_module), replay_pads, one_row)
    patcher.wrap(target, lambda wrapped, instance, args, kwargs: _torch_forward(spec, wrapped, instance, args, kwargs))


@hidden_from_warnings
def _torch_forward(spec: "_Spec", wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    bound = signature(wrapped).bind(*args, **kwargs)
    hidden = bound.arguments["input_states"]
    cache, mask = bound.arguments.get("cache_params"), bound.arguments.get("attention_mask")
    n, k, layer = hidden.shape[1], int(instance.chunk_size), instance.layer_idx
    state = cache is not None and (has_state(cache, layer) or _offset(cache) > 0)
    if n == 1 or (not state and n <= k):
        return wrapped(*args, **kwargs)  # upstream is right here
    if mask is not None and (mask.dim() != 2 or mask.shape[0] != hidden.shape[0] or mask.shape[1] < n):
        return wrapped(*args, **kwargs)  # not a 2D padding mask over these tokens: what it covers is a guess
    mask = None if mask is None else mask[:, -n:]
    if spec.one_row and hidden.shape[0] != 1:
        return _row_by_row(spec, wrapped, instance, hidden, cache, mask, k, args, kwargs)
    head = 0 if state else k
    pads = None
    if mask is not None and not bool((mask[:, head:] == 1).all()):
        # Only left padding is replayed as upstream's chunk path treats it: each row's zeros before its ones, and
        # after a cached state only in rows whose SSM state is still exactly zero (rows that have seen nothing but
        # pads: a left-padded batch prefilled in chunks). Anything else is the caller's guess of where pads belong
        # in a recurrence: upstream's.
        if not spec.replay_pads or not bool((mask[:, 1:] >= mask[:, :-1]).all()):
            return wrapped(*args, **kwargs)
        if state and not _only_pads_so_far(cache, layer, (mask == 0).any(dim=1)):
            return wrapped(*args, **kwargs)
        pads = mask == 0
    own = cache if cache is not None else _private_cache(spec, instance, hidden)
    if own is None:
        return wrapped(*args, **kwargs)
    spec.record.changed("%d of %d tokens fed one at a time after %s", n - head, n,
                    "the cached state" if state else f"a first chunk of {k}")
    outputs = []
    if head:
        outputs.append(wrapped(input_states=hidden[:, :head], cache_params=own,
                               attention_mask=None if mask is None else mask[:, :head]))
    # What makes the mixer take its one-token path: the generic cache's per-layer has_previous_state(layer) (set by
    # the chunk above), the hybrid caches' one flag (4.49-5.4; the model sets it after its whole forward), or
    # Mamba-2's seqlen_offset (4.x; the model adds the tokens after its forward). The last two are set for the loop
    # and restored, so the model's own bookkeeping after the forward is unchanged.
    flag = getattr(own, "has_previous_state", None)
    mode = None if callable(flag) else "offset" if flag is None and _offset(own) >= 0 else "flag"
    saved = own.seqlen_offset if mode == "offset" else flag
    if mode == "flag":
        own.has_previous_state = True
    elif mode == "offset":
        own.seqlen_offset = max(saved, 1)
    try:
        for i in range(head, n):
            token, step_mask = hidden[:, i:i + 1], None if mask is None else mask[:, i:i + 1]
            padded = pads is not None and bool(pads[:, i].any())
            if padded:
                token = (token * step_mask[:, :, None]).to(token.dtype)  # upstream masks a pad's input
            outputs.append(wrapped(input_states=token, cache_params=own, attention_mask=step_mask))
            if padded:
                _ssm_state(own, layer)[pads[:, i]] = 0  # upstream's chunk path keeps a leading pad's state at zero
    finally:
        if mode == "flag":
            own.has_previous_state = saved
        elif mode == "offset":
            own.seqlen_offset = saved
    return torch.cat(outputs, dim=1)


@hidden_from_warnings
def _row_by_row(spec: "_Spec", wrapped: Any, instance: Any, hidden: Any, cache: Any, mask: Any, k: int,
                args: tuple, kwargs: dict) -> Any:
    """A batch on a mixer whose one-token path cannot take one (Mamba-2 on 4.46-4.47): the rows of a forward without
    a cache are independent, so each is scanned alone, exactly as one row is, into a private cache of its own; a
    batch with a cache (its rows' states live in the caller's cache) and one whose padding past the first chunk a
    single row would leave to upstream stay upstream's (a batch that continues a cached state is refused by
    model-mamba2-batch)."""
    import torch

    if cache is not None:
        return wrapped(*args, **kwargs)
    if mask is not None and not bool((mask[:, k:] == 1).all()):
        return wrapped(*args, **kwargs)  # a pad past the first chunk: one row alone would be upstream's too
    spec.record.changed("a batch of %d rows without a cache scanned one row at a time", hidden.shape[0])
    outputs = [_torch_forward(spec, wrapped, instance, (),
                              {"input_states": hidden[r:r + 1], "cache_params": None,
                               "attention_mask": None if mask is None else mask[r:r + 1]})
               for r in range(hidden.shape[0])]
    return torch.cat(outputs, dim=0)


def _offset(cache: Any) -> int:
    """Mamba-2's 4.x cache counts the tokens it has seen (``seqlen_offset``) and has no has_previous_state; -1 for
    any other cache."""
    offset = getattr(cache, "seqlen_offset", None)
    if hasattr(cache, "has_previous_state") or not isinstance(offset, int):
        return -1
    return offset


def _private_cache(spec: "_Spec", mixer: Any, hidden: Any) -> Any:
    """For a forward without a cache: the cache the release's own model builds with ``use_cache=True`` (the model's
    hybrid cache, ``XHybridDynamicCache(config, batch, dtype, device)``, where the release has one;
    ``DynamicCache(config=...)`` later), so the mixer reads it through the release's own API; None when this module
    knows neither."""
    module = importlib.import_module(spec.module)
    config = getattr(mixer, "config", None)
    if config is None:
        return _LayerStates.of(mixer, hidden)
    hybrid = getattr(module, spec.hybrid_cache, None)
    if hybrid is not None:
        return hybrid(config, hidden.shape[0], dtype=hidden.dtype, device=hidden.device)
    try:
        from transformers.cache_utils import DynamicCache

        return DynamicCache(config=config)
    except (ImportError, TypeError, KeyError, ValueError):
        # a config the release's own cache cannot lay out (NemotronH 5.13-5.14 with an "mlp" layer: KeyError, which
        # its own cached forward raises too): upstream's no-cache forward, as it is
        return None


def _only_pads_so_far(cache: Any, layer: int, rows: Any) -> bool:
    """Whether the SSM state of every row in ``rows`` is exactly zero (what upstream's chunk path leaves after pads)."""
    try:
        state = _ssm_state(cache, layer)
        return state is not None and not bool(state[rows].any())
    except (AttributeError, IndexError, KeyError, TypeError):
        return False


def _ssm_state(cache: Any, layer: int) -> Any:
    """This layer's SSM state tensor in the cache (written in place)."""
    if hasattr(cache, "ssm_states"):  # the hybrid cache of 4.49 - 5.4
        return cache.ssm_states[layer]
    states = cache.layers[layer].recurrent_states  # the generic cache: a tensor, or one per state index
    if isinstance(states, dict):
        # 5.14 keys them by state index: read as a tensor, the dict made _only_pads_so_far say no, so a left-padded
        # batch prefilled in chunks went to upstream's wrong chunk path (NemotronH 0.40 on 5.14.1, session 30)
        return states.get(0)
    return states[0] if isinstance(states, (list, tuple)) else states


class _LayerStates:
    """The private cache of a mixer that keeps no config (Mamba-2 on 4.x): ``Mamba2Cache``'s layout for this one layer
    (``conv_states`` and ``ssm_states`` keyed by layer, ``seqlen_offset``), zeros, in the input's dtype."""

    def __init__(self, layer: int, conv: Any, ssm: Any):
        self.seqlen_offset = 0
        self.conv_states = {layer: conv}
        self.ssm_states = {layer: ssm}

    @classmethod
    def of(cls, mixer: Any, hidden: Any) -> "_LayerStates | None":
        import torch

        try:
            batch = hidden.shape[0]
            conv = torch.zeros(batch, int(mixer.conv_dim), int(mixer.conv_kernel_size), dtype=hidden.dtype,
                               device=hidden.device)
            ssm = torch.zeros(batch, int(mixer.num_heads), int(mixer.head_dim), int(mixer.ssm_state_size),
                              dtype=hidden.dtype, device=hidden.device)
        except (AttributeError, TypeError, ValueError):
            return None  # a mixer whose state sizes this module does not know: upstream's
        return cls(mixer.layer_idx, conv, ssm)
