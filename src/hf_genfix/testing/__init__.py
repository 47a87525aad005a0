"""Generation-consistency checks for model authors: does ``generate()`` on *your* model give the right tokens?

``check_generation(model)`` runs hf_genfix's oracles on any decoder-only model -- a stock one, your own subclass,
a remote-code model -- and reports, per check, which prompt and which generated step went wrong, by how much,
and what the decode step was fed. The reference is always one forward pass without cache over a row's unpadded
tokens (within the model's dtype's tolerance: float32, atol 1e-4; docs/precision.md): a model whose forward matches its reference but whose ``generate()`` drifts from the
second token on (a ``prepare_inputs_for_generation`` out of step with the cache) fails here, with the cause named.

    from hf_genfix.testing import check_generation

    def test_my_model_generates_consistently():
        model = MyModelForCausalLM(MyConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2))
        check_generation(model).raise_for_failures()

With pytest, the ``generation_checker`` fixture (plugin ``hf_genfix``) does the same and fails the test with
the report. Importing this module imports neither torch nor transformers; running a check does.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Sequence

from ._report import FAILED, NOT_RUN, PASSED, SKIPPED, CheckResult, GenerationCheckFailed, GenerationReport

__all__ = [
    "CHECKS",
    "CheckResult",
    "GenerationCheckFailed",
    "GenerationReport",
    "check_generation",
]

# name -> what it checks; the driver is hf_genfix.testing._checks.check_<name with _ for ->, run in this order.
CHECKS: dict[str, str] = {
    "cache": "greedy generate() with and without the cache vs one forward pass without cache",
    "left-padding": "a left-padded batch, with and without the cache, vs each row alone",
    "right-padding": "a right-padded batch vs each row alone, with hf_genfix's padding patches",
    "decode-loop": "a hand-written decode loop through prepare_inputs_for_generation",
    "sliding-window": "generation past the sliding window",
    "assisted": "assisted decoding gives the same tokens as plain greedy",
}

DEFAULT_TEXTS = (
    "The quick brown fox jumps over",
    "Hello",
    "Once upon a time, in a land far away, there lived",
)


def check_generation(
    model: Any,
    tokenizer: Any = None,
    *,
    prompts: Sequence[str] | Sequence[Sequence[int]] | None = None,
    max_new_tokens: int = 8,
    checks: Iterable[str] | None = None,
    assistant_model: Any = None,
    atol: float | None = None,
    pad_token_id: int | None = None,
    patches: str = "installed",
    generate_kwargs: dict[str, Any] | None = None,
    dtype: Any = None,
    device: Any = None,
) -> GenerationReport:
    """Run the generation checks on ``model`` and return a ``GenerationReport`` (it does not raise on a failed
    check: call ``.raise_for_failures()``, or use the ``generation_checker`` pytest fixture).

    - ``prompts``: strings (needs ``tokenizer``) or lists of token ids; default: three prompts of different
      lengths (from ``tokenizer`` if given, else token ids below the model's vocabulary size).
    - ``max_new_tokens``: greedy steps per run (default 8).
    - ``checks``: the names to run (default: all of ``CHECKS`` that apply; ``assisted`` only with
      ``assistant_model``).
    - ``assistant_model``: a draft model for the ``assisted`` check, or ``True`` to draft with ``model`` itself.
    - ``atol``: logit tolerance (default: the model's dtype's, ``hf_genfix.oracles.ATOLS``: 1e-4 for float32,
      2.5e-2 for bfloat16, 2.5e-3 for float16; docs/precision.md).
    - ``dtype`` / ``device``: run the checks on a copy of ``model`` (and of ``assistant_model``) converted to
      them, e.g. ``dtype="bfloat16", device="cuda"``; the model you pass is left as it is. Default: the model's
      own dtype and device (no copy).
    - ``patches``: ``"installed"`` runs with hf_genfix's patches as this process has them (importing hf_genfix
      activates them); ``"off"`` runs inside ``hf_genfix.disabled()`` -- what users without hf_genfix get.
    - ``generate_kwargs``: extra arguments for every ``generate()`` call (e.g. ``cache_implementation``).
    """
    import contextlib

    import hf_genfix

    if patches not in ("installed", "off"):
        raise ValueError(f"patches must be 'installed' or 'off', not {patches!r}")
    wanted = list(CHECKS) if checks is None else list(checks)
    unknown = [c for c in wanted if c not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; known: {list(CHECKS)}")
    started = time.perf_counter()
    model = _converted(model, dtype, device)
    if assistant_model is not None and assistant_model is not True:
        assistant_model = _converted(assistant_model, dtype, device)
    context = hf_genfix.disabled() if patches == "off" else contextlib.nullcontext()
    with context, _precision_of(model), _eval_mode(model), _quiet_transformers():
        from ._checks import Context

        ctx = Context(
            model=model,
            rows=_rows(model, tokenizer, prompts),
            max_new_tokens=max_new_tokens,
            pad_token_id=_pad_token_id(model, tokenizer, pad_token_id),
            atol=_atol(model) if atol is None else atol,
            tokenizer=tokenizer,
            assistant_model=model if assistant_model is True else assistant_model,
            vocab_size=_vocab_size(model),
            generate_kwargs=dict(generate_kwargs or {}),
        )
        results = []
        for name in wanted:
            results.append(_run_check(name, ctx, patches, explicit=checks is not None))
            if results[-1].passed:
                ctx.passed.add(name)
        installed = [s.id for s in hf_genfix.status() if s.state in ("applied", "forced")]
    return GenerationReport(
        model=_describe(model),
        transformers_version=_transformers_version(),
        patches=installed,
        checks=results,
        seconds=time.perf_counter() - started,
    )


def _run_check(name: str, ctx: Any, patches: str, explicit: bool) -> CheckResult:
    from ..oracles.outcome import DefectObserved, ProbeSkipped

    title = CHECKS[name]
    if name == "assisted" and ctx.assistant_model is None:
        if not explicit:
            return CheckResult(name, title, SKIPPED, "not asked: pass assistant_model=<draft model> (or True)")
        ctx.assistant_model = ctx.model
    from ._checks import NOT_AVAILABLE, NotAvailable

    driver = getattr(_checks_module(), "check_" + name.replace("-", "_"), None)
    if driver is None:
        return CheckResult(name, title, NOT_RUN, NOT_AVAILABLE)
    started = time.perf_counter()
    try:
        figures = driver(ctx, patches=patches) if _takes_patches(driver) else driver(ctx)
    except NotAvailable as exc:
        return CheckResult(name, title, NOT_RUN, str(exc))
    except ProbeSkipped as exc:
        return CheckResult(name, title, SKIPPED, str(exc), seconds=time.perf_counter() - started)
    except DefectObserved as exc:
        return CheckResult(name, title, FAILED, exc.message, dict(exc.figures), time.perf_counter() - started)
    return CheckResult(name, title, PASSED, "", dict(figures or {}), time.perf_counter() - started)


def _checks_module() -> Any:
    from . import _checks

    return _checks


def _takes_patches(driver: Callable[..., Any]) -> bool:
    import inspect

    return "patches" in inspect.signature(driver).parameters


# -- inputs -----------------------------------------------------------------------------------------------------
def _rows(model: Any, tokenizer: Any, prompts: Any) -> list[list[int]]:
    if prompts is None:
        if tokenizer is not None:
            prompts = DEFAULT_TEXTS
        else:
            return _default_rows(model)
    rows: list[list[int]] = []
    for prompt in prompts:
        if isinstance(prompt, str):
            if tokenizer is None:
                raise ValueError("text prompts need a tokenizer: check_generation(model, tokenizer, prompts=[...])")
            ids = tokenizer(prompt)["input_ids"]
        else:
            ids = prompt.tolist() if hasattr(prompt, "tolist") else prompt
        ids = [int(i) for i in ids]
        if not ids:
            raise ValueError(f"prompt {prompt!r} gives no tokens")
        rows.append(ids)
    if not rows:
        raise ValueError("no prompts given")
    return rows


def _default_rows(model: Any) -> list[list[int]]:
    """Three token rows of lengths 6, 3 and 9, away from the special ids, below the vocabulary size."""
    config = model.config
    vocab = _vocab_size(model)
    special = {getattr(config, k, None) for k in ("pad_token_id", "bos_token_id", "eos_token_id")}
    usable = [i for i in range(3, vocab) if i not in special] or list(range(vocab))
    rows = []
    for r, length in enumerate((6, 3, 9)):
        rows.append([usable[(7 * i + 11 * r + 5) % len(usable)] for i in range(length)])
    return rows


def _vocab_size(model: Any) -> int:
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    weight = getattr(embeddings, "weight", None)
    if weight is not None:
        return int(weight.shape[0])
    return int(model.config.vocab_size)


def _pad_token_id(model: Any, tokenizer: Any, explicit: int | None) -> int:
    candidates = [explicit, getattr(tokenizer, "pad_token_id", None)]
    for source in (getattr(model, "generation_config", None), getattr(model, "config", None)):
        candidates += [getattr(source, "pad_token_id", None), getattr(source, "eos_token_id", None)]
    for value in candidates:
        if isinstance(value, (list, tuple)):
            value = value[0] if value else None
        if value is not None:
            return int(value)
    return 0


def _converted(model: Any, dtype: Any, device: Any) -> Any:
    """``model`` itself when it already has ``dtype`` and ``device`` (or they are None), else a converted copy
    (a cast to half precision and back would not give the caller's weights back)."""
    import copy

    import torch

    from ..oracles.precision import dtype_name

    first = next(iter(model.parameters()), None)
    if first is None:
        return model
    want_dtype = getattr(torch, dtype_name(dtype)) if dtype is not None else first.dtype
    want_device = torch.device(device) if device is not None else first.device
    same_device = want_device.type == first.device.type and want_device.index in (None, first.device.index)
    if want_dtype == first.dtype and same_device:
        return model
    return copy.deepcopy(model).to(device=want_device, dtype=want_dtype)


def _precision_of(model: Any) -> Any:
    """The oracles' ``precision()`` for ``model``'s dtype and device (tolerance, where references are built)."""
    import contextlib

    from ..oracles.precision import ATOLS, precision

    first = next(iter(model.parameters()), None)
    if first is None:
        return contextlib.nullcontext()
    name = str(first.dtype).removeprefix("torch.")
    return precision(name if name in ATOLS else None, str(first.device))


def _atol(model: Any) -> float:
    from ..oracles.precision import ATOLS

    try:
        dtype = next(model.parameters()).dtype
    except StopIteration:
        return ATOLS["float32"]
    return ATOLS.get(str(dtype).removeprefix("torch."), ATOLS["bfloat16"])


class _eval_mode:
    """Dropout off for the checks; the model's training flag is restored afterwards."""

    def __init__(self, model: Any):
        self.model, self.was_training = model, bool(getattr(model, "training", False))

    def __enter__(self) -> None:
        if self.was_training:
            self.model.eval()

    def __exit__(self, *exc: Any) -> None:
        if self.was_training:
            self.model.train()


class _quiet_transformers:
    """transformers' own log lines (generation-config notices from the drafts, ...) say nothing the report does
    not; its verbosity is restored afterwards."""

    def __enter__(self) -> None:
        from transformers.utils import logging

        self.level = logging.get_verbosity()
        logging.set_verbosity_error()

    def __exit__(self, *exc: Any) -> None:
        from transformers.utils import logging

        logging.set_verbosity(self.level)


def _describe(model: Any) -> str:
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    name = type(model).__name__
    return f"{name} ({model_type})" if model_type else name


def _transformers_version() -> str | None:
    from .._registry import transformers_version

    return transformers_version()
