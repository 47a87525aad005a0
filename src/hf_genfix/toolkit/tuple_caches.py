"""Tuple caches of old remote code in the model's own layout, recognised from what its forward returns, and the
view of a cache that code written for 4.3x-4.40 reads (``LegacyCacheView``, ``legacy_tuples``, ``tuple_style``):
shared by ``legacy-cache`` (prepare-inputs) and ``remote-code-cache-api`` (remote-code).

Remote code written before the Cache classes keeps each layer's past as its attention happens to hold it. The
layouts met in Hub files (facts read in the public repositories): ``[batch, heads, seq, dim]`` (InternLM2,
GLM-4V, Baichuan), ``[seq, batch, heads, dim]`` (ChatGLM2, first ChatGLM3 releases), ``[batch, seq, heads, dim]``
(Qwen-1, concatenated on dim 1), merged heads ``[batch, seq, hidden]``, ``[batch * heads, seq, dim]`` (Falcon's
RefinedWeb code) and Bloom's transposed key ``[batch * heads, dim, seq]``, and a single tensor per layer with key
and value stacked, ``[2, batch, heads, seq, dim]`` (GPT-2-era code). Which of them a class uses is not read from
its source but from the tensors its forward returns: the sequence is the one dimension whose size is the number
of positions the call leaves in the cache (tokens held before it plus the tokens fed), the batch the one
outermost dimension of the batch size (for three-dimensional tensors, or of the batch size times a head count
of the configuration): every layout above is batch-major, after the stacking dimension of a stacked tensor.
Where the sequence's size is shared by another dimension (a prompt as long as the model has heads), the cache is
filled in one of the candidate layouts, all of which hand the model back exactly what it returned, and the next
forward, which grows only the sequence, names the right one (the cache is then refilled). Where the layout still
cannot be told (no dimension of the batch size, candidates that disagree on the batch, a layer unlike the
first, a sequence that did not grow by the tokens fed) ``LayoutUnknown`` is raised, naming the class, the patch
and how to turn it off; nothing is guessed. A layout once recognised for a class is used for its later calls
when their shapes fit it.

The real cache keeps one tensor per layout element with the batch first and the sequence second to last (for
the first layout that is transformers' own; the others are permuted, never copied), so ``generate()``'s length
bookkeeping, beam reordering and cropping act on the right dimensions; a single stacked tensor goes into the
keys (the values hold a zero-width slice of it). ``to_model`` hands the exact tensors back in the model's layout.
"""

from __future__ import annotations

import inspect
import weakref
from dataclasses import dataclass
from typing import Any, Sequence

import wrapt

from ..helpers.decode import cache_length

PATCH = "remote-code-cache-api"
OFF = "HF_GENFIX_REMOTE_CODE_CACHE_API=off"
# Configuration attributes that hold a head count (query or key/value heads), across old remote families.
_HEAD_ATTRS = ("num_attention_heads", "num_key_value_heads", "multi_query_group_num", "n_head", "num_heads",
               "num_kv_heads", "n_head_kv", "n_heads", "num_query_groups")


class LayoutUnknown(RuntimeError):
    """hf_genfix cannot tell (or keep) the layout of a remote model's tuple cache; it fails rather than guess."""


@dataclass(frozen=True)
class TensorLayout:
    """Where the batch and the sequence are in one returned tensor; ``merged``: the batch dimension holds
    ``batch * heads`` (batch outermost)."""

    ndim: int
    batch: int
    seq: int
    merged: bool = False

    def fits(self, tensor: Any, batch: int, length: int) -> bool:
        shape = tuple(tensor.shape)
        if len(shape) != self.ndim or shape[self.seq] != length:
            return False
        return shape[self.batch] % batch == 0 if self.merged else shape[self.batch] == batch

    def _order(self) -> tuple[list[int], int, int]:
        batch, seq = self.batch, self.seq + (1 if self.merged and self.seq > self.batch else 0)
        ndim = self.ndim + (1 if self.merged else 0)
        rest = [i for i in range(ndim) if i not in (batch, seq) and not (self.merged and i == batch + 1)]
        if self.merged:
            rest = [batch + 1, *rest]
        return [batch, *rest[:-1], seq, rest[-1]], batch, ndim

    def to_cache(self, tensor: Any, batch: int) -> Any:
        """The tensor with the batch first and the sequence second to last."""
        if self.merged:
            tensor = tensor.unflatten(self.batch, (batch, -1))
        order, _, _ = self._order()
        return tensor.permute(*order)

    def to_model(self, tensor: Any) -> Any:
        order, batch, _ = self._order()
        inverse = [order.index(i) for i in range(len(order))]
        tensor = tensor.permute(*inverse)
        return tensor.flatten(batch, batch + 1) if self.merged else tensor


@dataclass(frozen=True)
class Layout:
    """A layer's past as the model holds it: a tuple of tensors, or one tensor (``single``)."""

    parts: tuple[TensorLayout, ...]
    single: bool = False

    def elements(self, layer: Any) -> Sequence[Any]:
        return (layer,) if self.single else tuple(layer)

    def fits(self, returned: Sequence[Any], batch: int, length: int) -> bool:
        for layer in returned:
            elements = self.elements(layer) if _is_tensor(layer) == self.single else None
            if elements is None or len(elements) != len(self.parts):
                return False
            if not all(p.fits(t, batch, length) for p, t in zip(self.parts, elements)):
                return False
        return True

    def to_cache(self, layer: Any, batch: int) -> tuple[Any, Any]:
        """(key, value) for the real cache."""
        if self.single:
            whole = self.parts[0].to_cache(layer, batch)
            return whole, whole[..., :0]
        key, value = (p.to_cache(t, batch) for p, t in zip(self.parts, layer))
        return key, value

    def to_model(self, key: Any, value: Any) -> Any:
        if self.single:
            return self.parts[0].to_model(key)
        return tuple(p.to_model(t) for p, t in zip(self.parts, (key, value)))


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "permute")


def head_counts(config: Any) -> set[int]:
    counts = {getattr(config, name, None) for name in _HEAD_ATTRS}
    return {c for c in counts if isinstance(c, int) and c > 1}


def _tensor_layouts(shape: Sequence[int], batch: int, length: int, heads: set[int],
                    stacked: bool = False) -> list[TensorLayout] | str:
    """The layouts one tensor can have (more than one only where several dimensions have the cache's length, with
    the batch the same dimension for each), or why it cannot be told. The batch is the outermost dimension of the
    batch size (after the stacking dimension of a ``stacked`` tensor): batch-major, as in every layout above."""
    shape = tuple(int(s) for s in shape)
    seqs = [i for i, size in enumerate(shape) if size == length and not (stacked and i == 0)]
    if len(shape) < 3 or not seqs:
        return f"no dimension of {list(shape)} has the {length} positions the cache should hold"
    if stacked and shape[0] != 2:
        return f"a single tensor {list(shape)} per layer without key and value stacked on its first dimension"
    found = []
    for seq in seqs:
        others = [i for i in range(1 if stacked else 0, len(shape)) if i != seq]
        candidates = [(i, False) for i in others if shape[i] == batch]
        if len(shape) == 3:  # [batch * heads, seq, dim] / [batch * heads, dim, seq] (Falcon, Bloom)
            candidates += [(i, True) for i in others if any(shape[i] == batch * k for k in heads)]
        if not candidates:
            return f"no dimension of {list(shape)} can be the batch of {batch}"
        index, merged = min(candidates)
        found.append(TensorLayout(len(shape), index, seq, merged))
    if len({(f.batch, f.merged) for f in found}) != 1:
        return f"the batch of {batch} is not the same dimension of {list(shape)} for every candidate sequence"
    return found


def detect(returned: Sequence[Any], batch: int, length: int, heads: set[int]) -> list[Layout] | str:
    """The layouts a forward's returned per-layer past can have (every layer fits each), or why it cannot be
    told. More than one where the sequence shares its size with another dimension: the next forward, which
    grows only the sequence, tells them apart (``Pending``)."""
    import itertools

    if not returned:
        return "the model returned no layers"
    first = returned[0]
    single = _is_tensor(first)
    if single and getattr(first, "dim", lambda: 0)() != 5 or not single and not isinstance(first, (tuple, list)):
        return f"a layer of type {type(first).__name__} is neither a (key, value) pair nor stacked key/value"
    elements = (first,) if single else tuple(first)
    if not single and (len(elements) != 2 or not all(_is_tensor(t) for t in elements)):
        return f"a layer of {len(elements)} elements is not a (key, value) pair"
    per_part = []
    for tensor in elements:
        found = _tensor_layouts(tensor.shape, batch, length, heads, stacked=single)
        if isinstance(found, str):
            return found
        per_part.append(found)
    layouts = [Layout(tuple(parts), single) for parts in itertools.product(*per_part)]
    if not layouts[0].fits(returned, batch, length):
        return "its layers do not all have the layout of the first"
    return layouts


_KNOWN: "weakref.WeakKeyDictionary[type, Layout]" = weakref.WeakKeyDictionary()
# Caches filled from a forward whose layout was not yet certain: {cache: candidate layouts}, the first of which
# the cache was filled in. Any of them hands the model back exactly the tensors it returned (each is a
# permutation of the others' equal-size dimensions, with the batch in the same place), so the next forward runs
# on its own past and the one dimension that grew names the layout.
_PENDING: "weakref.WeakKeyDictionary[Any, list[Layout]]" = weakref.WeakKeyDictionary()


def known(cls: type, cache: Any = None) -> Layout | None:
    """The layout the tuples of ``cache`` are to be handed to ``cls`` in."""
    pending = _PENDING.get(cache) if cache is not None else None
    return pending[0] if pending else _KNOWN.get(cls)


def recognise(cls: type, config: Any, returned: Sequence[Any], batch: int, length: int, cache: Any) -> Layout:
    """The layout to put ``returned`` (a first forward's past) into ``cache`` in: the one recognised for ``cls``
    before when it fits, else recognised now (provisionally, see ``_PENDING``, where two dimensions have the
    length)."""
    layout = _KNOWN.get(cls)
    if layout is not None and layout.fits(returned, batch, length):
        return layout
    found = detect(returned, batch, length, head_counts(config))
    if isinstance(found, str):
        raise LayoutUnknown(
            f"{PATCH}: cannot tell the layout of the tuple cache {cls.__name__}.forward returned ({found}; batch "
            f"{batch}, {length} positions expected), so hf_genfix cannot hand it back to the model correctly. "
            f"Another batch size may be recognised; {OFF} turns the patch off (the model then fails as it does "
            f"without hf_genfix).")
    if len(found) == 1:
        _KNOWN[cls] = found[0]
    else:
        _PENDING[cache] = found
    return found[0]


def settle(cls: type, returned: Sequence[Any], batch: int, length: int, cache: Any) -> tuple[Layout, bool]:
    """The layout of a later forward's past (``length`` positions); True when it settles a pending one (the cache
    then holds the earlier positions in the provisional layout and must be refilled)."""
    pending = _PENDING.pop(cache, None)
    if pending:
        fitting = [layout for layout in pending if layout.fits(returned, batch, length)]
        if len(fitting) != 1:
            raise mismatch(cls, f"its forward returned a tuple cache whose shapes {shapes(returned)} hold {length} "
                                f"positions in {len(fitting)} of the layouts its first forward allowed")
        _KNOWN[cls] = fitting[0]
        return fitting[0], True
    layout = _KNOWN.get(cls)
    if layout is None or not layout.fits(returned, batch, length):
        raise mismatch(cls, f"its forward returned a tuple cache whose shapes {shapes(returned)} do not hold "
                            f"{length} positions in the layout it was handed")
    return layout, False


def shapes(returned: Any) -> list:
    first = returned[0] if returned else None
    if _is_tensor(first):
        return [list(first.shape)]
    return [list(t.shape) for t in first] if first is not None else []


class CacheMismatch(LayoutUnknown):
    """After a remote forward the cache does not hold the positions held before plus the tokens fed."""


def mismatch(cls: type, what: str) -> LayoutUnknown:
    return CacheMismatch(f"{PATCH}: {cls.__name__}: {what}; hf_genfix stops rather than generate from a wrong "
                         f"cache ({OFF} turns the patch off).")


class LegacyCacheView(wrapt.ObjectProxy):
    """A cache as a 4.40-era ``prepare_inputs_for_generation`` reads it; everything else goes to the cache."""

    @property
    def seen_tokens(self) -> int:
        return cache_length(self.__wrapped__)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.__wrapped__.get_seq_length(layer_idx)

    def get_max_length(self) -> int | None:
        # 4.40 meaning: the capacity of a bounded (static) cache, None when it grows without bound.
        real = self.__wrapped__
        if getattr(real, "is_compileable", None) is False:
            return None
        for name in ("get_max_cache_shape", "get_max_length"):
            method = getattr(type(real), name, None)
            if method is not None:
                value = method(real)
                return int(value) if value is not None and value >= 0 else None
        return None

    def get_usable_length(self, new_seq_length: int, layer_idx: int = 0) -> int:
        max_length = self.get_max_length()
        previous = self.__wrapped__.get_seq_length(layer_idx)
        if max_length is not None and previous + new_seq_length > max_length:
            return max_length - new_seq_length
        return previous

    def __getitem__(self, layer_idx: int) -> tuple[Any, Any]:
        layers = getattr(self.__wrapped__, "layers", None)
        if layers is not None:
            layer = layers[layer_idx]
            return layer.keys, layer.values
        return self.__wrapped__[layer_idx]

    def __len__(self) -> int:
        # 4.40: the number of layers holding states, 0 for an empty cache (hence `if past_key_values:`).
        if cache_length(self.__wrapped__) == 0:
            return 0
        layers = getattr(self.__wrapped__, "layers", None)
        return len(layers) if layers is not None else len(self.__wrapped__)

    def __bool__(self) -> bool:
        return cache_length(self.__wrapped__) > 0

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def to_legacy_cache(self) -> tuple:
        return tuple(self[i] for i in range(len(self)))

    # 4.36 - 4.55 kept the states in two lists, which old attention code reads (``key_cache[layer_idx]``).
    @property
    def key_cache(self) -> list:
        return self._states("key_cache", 0)

    @property
    def value_cache(self) -> list:
        return self._states("value_cache", 1)

    def _states(self, name: str, which: int) -> list:
        real = self.__wrapped__
        if getattr(real, "layers", None) is None:
            return getattr(real, name)
        return [self[i][which] for i in range(len(self))]


def legacy_tuples(cache: Any, cls: type | None = None) -> tuple | None:
    """``cache`` as the 4.3x tuple of per-layer pasts in the layout the forward of ``cls`` returned them
    (``tuple_caches``); None while it holds nothing (as 4.3x passed). A cache that holds positions for a class
    whose layout was never seen raises ``LayoutUnknown``: handing it over in some layout would be a guess."""
    if cache_length(cache) == 0:
        return None
    view = LegacyCacheView(cache)
    layout = known(cls, cache) if cls is not None else None
    if layout is None:
        if cls is None:
            return view.to_legacy_cache()
        raise mismatch(cls, "the cache holds positions but the model's own tuple layout was never seen (it is "
                            "recognised from the tuples its forward returns, which remote-code-cache-api reads)")
    return tuple(layout.to_model(key, value) for key, value in view)


def tuple_style(cls: type) -> bool:
    """Remote code written before the Cache classes (4.35 and earlier, InternLM2's first releases, ChatGLM3): its
    module imports no Cache class and indexes ``past_key_values[0][0]`` as tensors."""
    from .remote_code import is_remote, module_globals, uses

    if not is_remote(cls) or not uses(cls, TUPLE_CACHES):
        return False
    try:
        from transformers.cache_utils import Cache
    except ImportError:  # pragma: no cover - every release measured has it
        return True
    return not any(isinstance(v, type) and issubclass(v, Cache) for v in module_globals(cls).values())


TUPLE_CACHES = "tuple caches (past_key_values[0][0])"


def written_for_past_key_values(cls: type) -> bool:
    method = vars(cls).get("prepare_inputs_for_generation")
    module = getattr(method, "__module__", None) or ""
    if module == "transformers" or module.startswith("transformers."):
        return False
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
    return "past_key_values" in params and "cache" not in params
