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

from hf_genfix.toolkit import recorder
from hf_genfix.toolkit.prepare_inputs import GENERIC, wrap_overrides

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

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
    if record.on:
        record.seen()
    dropped = [key for key in _KEYS if isinstance(inputs, dict) and key in inputs and inputs[key] is None]
    if not dropped:
        record.unchanged()
    for key in dropped:
        del inputs[key]
        if record.on:
            record.changed("dropped %s=None", key)
    return inputs
