"""The dtype and device the oracles build models for, and the logit tolerance that goes with the dtype.

Probes do not take arguments (``probe()``), so the setting is ambient: ``with precision("bfloat16", "cuda"):``
makes every ``tiny_model()`` a bfloat16 model on ``cuda``, puts the padded batches of ``left_pad``/``right_pad``
and each reference row on that device, and makes the comparisons (``assert_close``,
``check_rows_against_reference``, ...) use that dtype's tolerance -- so every probe, existing or new, runs in
half precision or on a GPU without an edit. ``hf-genfix doctor --dtype/--device`` and the pytest option
``--genfix-dtype`` set it; the default is float32 on the CPU.

Tolerances (docs/precision.md has the measurement): a logit may differ from the no-cache reference of its row
by at most ``ATOLS[dtype]``. For float32 that is 1e-4. For bfloat16 and float16 it is the largest difference
measured between two no-cache forwards of the *same* row that differ only in what shares the batch (another row,
left padding) -- the noise of the dtype itself -- times a margin of 4; every defect the probes look for moves
logits by far more (see the doc).
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Any, Iterator

# dtype name -> max |logit diff| allowed against the reference (float32 logits of the tiny models are O(1)).
ATOLS: dict[str, float] = {"float32": 1e-4, "float64": 1e-4, "bfloat16": 2.5e-2, "float16": 2.5e-3}
DTYPES = tuple(ATOLS)


@dataclass(frozen=True)
class Precision:
    dtype: str = "float32"
    device: str = "cpu"
    # The attention kernel of ``tiny_config`` models: "eager" unless asked ("sdpa", "flash_attention_2"); the
    # reference and the cached path then take the same kernel.
    attn: str = "eager"

    @property
    def atol(self) -> float:
        return ATOLS[self.dtype]

    @property
    def torch_dtype(self) -> Any:
        import torch

        return getattr(torch, self.dtype)

    @property
    def default(self) -> bool:
        return self == Precision()


_CURRENT: contextvars.ContextVar[Precision] = contextvars.ContextVar("hf_genfix_precision", default=Precision())


def current() -> Precision:
    """The setting the oracles use now (float32 on the CPU unless inside ``precision()``)."""
    return _CURRENT.get()


def tolerance(atol: float | None = None) -> float:
    """``atol`` when given, else the current dtype's tolerance."""
    return current().atol if atol is None else atol


def dtype_name(dtype: Any) -> str:
    """``"bfloat16"`` for ``"bfloat16"``, ``"bf16"`` or ``torch.bfloat16``; ValueError for anything else."""
    name = str(dtype).removeprefix("torch.")
    name = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32",
            "double": "float64"}.get(name, name)
    if name not in ATOLS:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    return name


@contextlib.contextmanager
def precision(dtype: Any = None, device: Any = None, attn: str | None = None) -> Iterator[Precision]:
    """Build oracle models in ``dtype`` on ``device`` with attention kernel ``attn`` inside the block (None keeps
    the current value).

    Off the CPU, torch's default device is ``device`` inside the block too, so a probe's own
    ``torch.tensor(...)`` inputs land where its model is (a fix, by contrast, must create its tensors on its
    input's device: the tests check that on the CPU, where the default cannot hide it)."""
    now = current()
    setting = Precision(dtype_name(dtype) if dtype is not None else now.dtype,
                        str(device) if device is not None else now.device, attn or now.attn)
    token = _CURRENT.set(setting)
    try:
        if setting.device != "cpu":
            import torch

            with torch.device(setting.device):
                yield setting
        else:
            yield setting
    finally:
        _CURRENT.reset(token)


def cast(model: Any) -> Any:
    """``model`` in the current dtype, on the current device, in eval mode (what every oracle model gets)."""
    setting = current()
    model = model.to(device=setting.device, dtype=setting.torch_dtype).eval()
    if setting.dtype == "float64" and getattr(getattr(model, "config", None), "_experts_implementation", None) \
            not in (None, "eager") and hasattr(model, "set_experts_implementation"):
        # torch's grouped matmul (5.x MoE experts' default kernel) has no float64: the experts run their eager loop.
        model.set_experts_implementation("eager")
    return model
