"""Sweep scenario: a forward is a function of its inputs (issue 36, recall).

By definition a model's forward reads the tensors it is given and writes none of them: the same call twice gives
the same logits, and every tensor the caller passed is, after the call, what it was before. Callers rely on it
without saying so: generate() keeps ``position_ids`` (5.0 - 5.2) and the attention mask in ``model_kwargs`` and
hands the same tensors to the next forward, and a hand-written loop passes its ``position_ids`` again.

Recall missed model-xglm-positions on 4.46.3: XGLM's positional embedding wrote its offset into the caller's
``position_ids`` (``+=``), and that release's generate() rebuilds the positions every step, so no generate()
scenario saw it. ``same-call-twice`` asks the definition directly, on every decoder-only model: one forward of two
rows with an explicit attention mask (and ``position_ids`` where the forward takes them), without a cache; each
input tensor must be bitwise unchanged, and a second forward with the same tensor objects must give the first
one's logits (within rounding: the same arithmetic).
"""

from __future__ import annotations

from typing import Any

from ..outcome import DefectObserved
from ..precision import tolerance
from ..reference import max_diff
from .core import Subject, scenario


@scenario("same-call-twice")
def same_call_twice(s: Subject) -> dict:
    """Two forwards with the same input tensors: neither writes into them, both give the same logits."""
    import torch

    rows = s.rows(9, 9, seed=21)
    ids = torch.tensor(rows, device=s.model.device)
    inputs: dict[str, Any] = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if s.takes_position_ids:
        inputs["position_ids"] = torch.arange(ids.shape[1], device=ids.device).expand_as(ids).clone()
    before = {name: tensor.clone() for name, tensor in inputs.items()}
    with torch.no_grad():
        first = s.model(**inputs, use_cache=False).logits
        touched = [name for name, tensor in inputs.items() if not torch.equal(tensor, before[name])]
        if touched:
            name = touched[0]
            raise DefectObserved(
                f"a forward wrote into the caller's {', '.join(touched)} "
                f"(first row before {before[name][0].tolist()}, after {inputs[name][0].tolist()})")
        second = s.model(**inputs, use_cache=False).logits
    diff = max_diff(first, second)
    if not diff <= tolerance():
        raise DefectObserved(f"the same forward twice: max |logit diff| {diff:.3g} between the two calls",
                             max_logit_diff=diff)
    return {"max_logit_diff": diff, "inputs": sorted(inputs)}
