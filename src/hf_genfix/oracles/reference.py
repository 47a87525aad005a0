"""The reference answer: one forward pass without cache over a row's unpadded tokens."""

from __future__ import annotations

from typing import Any, Sequence

from .outcome import DefectObserved
from .precision import ATOLS, tolerance

ATOL = ATOLS["float32"]  # float32's; the tolerance in force is ``precision.tolerance()``


def reference_logits(model: Any, ids: Sequence[int] | Any) -> Any:
    """Logits ``(len(ids), vocab)`` of one no-cache forward over ``ids`` (a single, unpadded row)."""
    import torch

    row = torch.as_tensor(ids, dtype=torch.long, device=_device(model)).reshape(1, -1)
    # a model without a cache (OpenAI-GPT before 5.x) takes no use_cache: its forward is cache-less anyway
    extra = dict(use_cache=False) if forward_takes(model, "use_cache") else {}
    with torch.no_grad():
        out = model(input_ids=row, attention_mask=torch.ones_like(row), **extra)
    return out.logits[0].float()


def forward_takes(model: Any, name: str) -> bool:
    """Whether the model's forward takes the keyword ``name`` (by name or through ``**kwargs``; True when unsure)."""
    import inspect

    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _device(model: Any) -> Any:
    device = getattr(model, "device", None)
    if device is None:
        device = next(model.parameters()).device
    return device


def max_diff(a: Any, b: Any) -> float:
    import torch

    a, b = torch.as_tensor(a).float(), torch.as_tensor(b).float()
    if a.device != b.device:
        b = b.to(a.device)
    if a.shape != b.shape:
        return float("inf")
    return float((a - b).abs().max()) if a.numel() else 0.0


def assert_close(actual: Any, expected: Any, what: str, atol: float | None = None, **figures: Any) -> float:
    """Raise ``DefectObserved`` naming ``what`` when ``actual`` and ``expected`` differ by more than ``atol``
    (default: the current dtype's tolerance, ``precision.tolerance()``)."""
    atol = tolerance(atol)
    diff = max_diff(actual, expected)
    if not diff <= atol:
        shape = getattr(actual, "shape", None), getattr(expected, "shape", None)
        detail = f"shapes {tuple(shape[0])} vs {tuple(shape[1])}" if diff == float("inf") else f"{diff:.3g}"
        raise DefectObserved(f"{what}: max |logit diff| {detail} > {atol}", max_logit_diff=diff, **figures)
    return diff
