"""prepare-inputs-logits-to-keep: some overrides forward ``logits_to_keep=None`` to a forward that cannot take it.

The defect. Phi3 and PhiMoE (and, up to 5.14, most vision-language models: llava, paligemma, idefics, gemma3,
mistral3, ...) declare ``logits_to_keep=None`` (``num_logits_to_keep=None`` up to 4.48) in their own
``prepare_inputs_for_generation`` and put it in the returned inputs. ``generate()`` passes a number when it
sees the parameter in ``inspect.signature(model.forward)``; any other caller, and ``generate()`` itself when a
training stack wrapped ``forward`` without ``functools.wraps`` (upstream issue 47530), sends None to
``forward``: ``TypeError: bad operand type for unary -: 'NoneType'`` on 4.46.3 - 4.48.3, and on 4.49.0 - 5.14.0
logits of four dimensions, ``(batch, 1, seq, vocab)`` (``logits[:, None, :]`` adds an axis instead of keeping
every position), which then fail in sampling or concatenation. 4.45.2 has no None default; 5.15.0 changed the
defaults to 0.

Detection (``probe``): tiny Phi3, one prefill step called the way a custom loop calls it (with what the
method needs to run on this release, so that this probe does not depend on the prepare-inputs patch); the
returned inputs are fed to ``forward`` and the logits compared with the reference.

Correction. Overrides whose signature defaults ``logits_to_keep`` / ``num_logits_to_keep`` to None (found by
signature, on classes defined now or later) are wrapped; when the returned inputs hold None for it, the key is
dropped so that ``forward`` applies its own default (every position). A call that got a number (every
``generate()`` whose forward is not wrapped) is unchanged.
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix import _record
from ._prepare_inputs_family import GENERIC, wrap_overrides

_KEYS = ("logits_to_keep", "num_logits_to_keep")


def install(patcher: Any) -> None:
    patcher.require(GENERIC)
    wrap_overrides(patcher, _drop_none_logits_to_keep, where=_defaults_to_none)


def _defaults_to_none(cls: type) -> bool:
    method = vars(cls).get("prepare_inputs_for_generation")
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
    return any(key in params and params[key].default is None for key in _KEYS)


def _drop_none_logits_to_keep(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    inputs = wrapped(*args, **kwargs)
    if _record.on:
        _record.seen("prepare-inputs-logits-to-keep")
    if isinstance(inputs, dict):
        for key in _KEYS:
            if key in inputs and inputs[key] is None:
                del inputs[key]
                if _record.on:
                    _record.changed("prepare-inputs-logits-to-keep", "dropped %s=None", key)
    return inputs


def probe() -> dict[str, Any]:
    import torch

    from hf_genfix.oracles import DefectObserved, assert_close, reference_logits, tiny_model
    from hf_genfix.oracles.decode import DEFAULT_ROWS, UPSTREAM_ERRORS

    model = tiny_model("phi3")
    row = list(DEFAULT_ROWS[1])
    ids = torch.tensor([row], device=model.device)
    call: dict[str, Any] = {"attention_mask": torch.ones_like(ids), "use_cache": True}
    if "cache_position" in inspect.signature(model.prepare_inputs_for_generation).parameters:
        call["cache_position"] = torch.arange(ids.shape[1], device=ids.device)  # what the method needs up to 5.2
    with torch.no_grad():
        try:
            inputs = model.prepare_inputs_for_generation(ids, **call)
            logits = model(**inputs).logits
        except UPSTREAM_ERRORS as exc:
            raise DefectObserved(f"phi3 prefill through prepare_inputs_for_generation: {type(exc).__name__}: "
                                 f"{exc}", error=type(exc).__name__) from exc
    expected = reference_logits(model, row)
    diff = assert_close(logits[0], expected, "phi3 prefill through prepare_inputs_for_generation")
    return {"max_logit_diff": diff, "logits_shape": list(logits.shape)}
