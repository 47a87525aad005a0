"""model-qwen2-vl-rope-deltas / model-qwen2-5-vl-rope-deltas: Qwen2-VL and Qwen2.5-VL keep the M-RoPE offsets of
the last prompt they saw on the model, not with the cache they belong to: a turn that continues a cache after any
other call (another request, another conversation, a no-cache forward) is silently wrong.

The defect. A Qwen-VL image of h x w patches takes h*w/4 tokens but advances the text positions by max(h, w)/2
only, so the position of the next text token is its index plus a per-row offset (``rope_deltas``). The model
computes that offset when it reads a prompt from position 0 and stores it on itself (``Qwen2VLModel.rope_deltas``);
every later call that continues a cache (the decode steps, and a second turn given ``past_key_values=
out.past_key_values``, or a ``copy.deepcopy`` of a prompt cache) adds the stored offset to the cached length.
Whatever the model read last wins: after another call, the continuation takes that call's offsets (of another
image size, another batch size, broadcast over the rows), and every position of the new turn is off by the
difference. Measured on the sweep's tiny models with loud weights (std 0.3), a left-padded batch of two prompts
whose images have 4 and 8 soft tokens: a second turn after a no-cache forward of one row is wrong by 5.2 logits on
5.24.0 and by 2.2 on 4.57.6 (where images of the same size in the padded batch fail too, by 4.0).

Detection. ``probe()``: that batch, turn 1 (3 tokens), one no-cache forward of another prompt, turn 2 from
``out.past_key_values`` with 4 new text tokens; every step of turn 2 against the no-cache forward of the whole
conversation of each row with its image.

Correction. The offsets travel with the cache they were computed for: after every call of the model's forward
(and of the generation hook that computes them: ``prepare_inputs_for_generation`` up to 4.57,
``_prepare_position_ids_for_generation`` on 5.x) that returns or fills a cache, the model's ``rope_deltas`` are
noted on that cache object (an attribute: ``copy.deepcopy`` copies it, a prompt cache keeps it); before a call
that continues a non-empty cache carrying a note, the model's ``rope_deltas`` are set back to it. A call whose
cache carries no note (a cache filled before hf_genfix was imported, or by other code) gets upstream's behaviour,
and a call that continues the cache it just filled (the decode steps of one ``generate()``) reads the very value
upstream reads, so every call upstream gets right is bitwise as it was.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import Recorder, hidden_from_warnings, recorder

# model type -> (module, class); the patch ids: ``-steps`` up to 5.1 (the offsets are read per step in
# ``prepare_inputs_for_generation``), the plain id from 5.2 (read once per generate() call in
# ``_prepare_position_ids_for_generation``).
MODELS = {
    "qwen2_vl": ("transformers.models.qwen2_vl.modeling_qwen2_vl", "Qwen2VLForConditionalGeneration"),
    "qwen2_5_vl": ("transformers.models.qwen2_5_vl.modeling_qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration"),
}
PATCHES = {"qwen2_vl": "model-qwen2-vl-rope-deltas", "qwen2_5_vl": "model-qwen2-5-vl-rope-deltas"}
NOTE = "_hf_genfix_rope_deltas"  # the attribute on a cache object: the offsets of the prompt it holds


def _install(patcher: Any, arch: str, hook: str) -> None:
    module, cls = MODELS[arch]
    patcher.require(f"{module}:{cls}.forward")
    patcher.require(f"{module}:{cls}.{hook}")
    # Functions closing over the installing patch's recorder (not functools.partial: the patcher hides each
    # wrapper's code from warnings' stacklevel): a call that restores nothing says it is upstream's.
    record = recorder(patcher.patch_id)
    patcher.wrap(f"{module}:{cls}.forward", lambda wrapped, instance, args, kwargs:
                 _forward(wrapped, instance, args, kwargs, record))
    patcher.wrap(f"{module}:{cls}.{hook}", lambda wrapped, instance, args, kwargs:
                 _generation_hook(wrapped, instance, args, kwargs, record))


def install_qwen2_vl(patcher: Any) -> None:
    _install(patcher, "qwen2_vl", "_prepare_position_ids_for_generation")


def install_qwen2_5_vl(patcher: Any) -> None:
    _install(patcher, "qwen2_5_vl", "_prepare_position_ids_for_generation")


def install_qwen2_vl_steps(patcher: Any) -> None:
    _install(patcher, "qwen2_vl", "prepare_inputs_for_generation")


def install_qwen2_5_vl_steps(patcher: Any) -> None:
    _install(patcher, "qwen2_5_vl", "prepare_inputs_for_generation")


def _holder(model: Any) -> Any:
    """The module that keeps ``rope_deltas``: the inner ``*VLModel`` from 4.52 (``model.model``), the generating
    class itself before."""
    inner = getattr(model, "model", None)
    return inner if hasattr(inner, "rope_deltas") else model


def _cache_of(kwargs: dict) -> Any:
    for key in ("cache", "past_key_values"):
        if kwargs.get(key) is not None:
            return kwargs[key]
    return None


def _length(cache: Any) -> int:
    get = getattr(cache, "get_seq_length", None)
    try:
        return int(get()) if get is not None else 0
    except Exception:  # noqa: BLE001 - a cache that cannot tell: treated as new (upstream's behaviour)
        return 0


def _restore(inner: Any, cache: Any, record: Recorder) -> None:
    """Before continuing ``cache``: the model's offsets are those of the prompt the cache holds, where noted. Where
    they already are (or nothing is noted), the call about to run is upstream's (the note ``_note`` leaves on the
    cache afterwards is ours alone), and ``record`` says so."""
    if record.on:
        record.seen()
    noted = getattr(cache, NOTE, None) if cache is not None and _length(cache) else None
    if noted is None or _same(noted, inner.rope_deltas):
        record.unchanged()
        return
    if record.on:
        record.changed("M-RoPE offsets of the prompt the cache holds put back (another call's were on the model)")
    inner.rope_deltas = noted


def _same(noted: Any, current: Any) -> bool:
    """Whether the model already holds the noted offsets: the same object, or (a no-cache forward in between
    recomputed them) equal values."""
    import torch

    if noted is current:
        return True
    return isinstance(noted, torch.Tensor) and isinstance(current, torch.Tensor) and noted.shape == current.shape \
        and noted.dtype == current.dtype and noted.device == current.device and torch.equal(noted, current)


def _note(inner: Any, cache: Any) -> None:
    if cache is None or inner.rope_deltas is None:
        return
    try:
        setattr(cache, NOTE, inner.rope_deltas)
    except (AttributeError, TypeError):  # a legacy tuple: nothing to carry the note (upstream's behaviour)
        pass


@hidden_from_warnings  # called from behind the patcher's wrapper (a lambda): stepped over as it is
def _forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict, record: Recorder) -> Any:
    holder, cache = _holder(instance), _cache_of(kwargs)
    _restore(holder, cache, record)
    out = wrapped(*args, **kwargs)
    returned = getattr(out, "cache", None) if "cache" in getattr(type(out), "__dataclass_fields__", ()) else \
        getattr(out, "past_key_values", None)
    _note(holder, returned if returned is not None else cache)
    return out


@hidden_from_warnings
def _generation_hook(wrapped: Any, instance: Any, args: tuple, kwargs: dict, record: Recorder) -> Any:
    inner = _holder(instance)
    if wrapped.__name__ == "_prepare_position_ids_for_generation":
        model_kwargs = args[1] if len(args) > 1 else kwargs.get("model_kwargs", {})
        cache = _cache_of(model_kwargs or {})
    else:
        cache = _cache_of(kwargs)
    _restore(inner, cache, record)
    result = wrapped(*args, **kwargs)
    _note(inner, cache)
    return result
