"""The remote-code kind of the sweep: the project's tiny remote-code repos (``oracles.legacy_models``: ten families
written the way Hub repos were written for older transformers) as architectures, judged by the sweep's general
equivalences.

Recall (``doctor --sweep --recall``) showed that the sweep found none of the remote-code defects of the catalog:
it built no remote-code model. Here each family is a subject (``remote-<family>``), and each scenario loads the
repo afresh as a user does (``AutoConfig`` / ``AutoModelForCausalLM`` with ``trust_remote_code=True``), inside the
run, so that the run without hf_genfix loads it without hf_genfix too: much of what breaks in remote code breaks
at load (a name a release removed, a configuration default). Then the same equivalences as for every other
kind, against one no-cache forward of each row alone:

- ``remote-cached``: greedy cached ``generate()`` of the family's batch (left-padded; ChatGLM's rows are of equal
  length, padding is not in its contract: ``legacy_models.rows_for``);
- ``remote-uncached``: the same with ``use_cache=False``;
- ``remote-beam``: beam search with a cache equals beam search without (3 beams, one row);
- ``remote-logged``: ``remote-cached`` under a log handler that formats every record and lets an error out, as
  pytest's log capture does: logging is no part of the answer.

A repo that cannot be loaded even with hf_genfix is not built (listed with the reason). The scenarios build their
own models, so the differential compares the two runs' verdicts, not their outputs (nothing is recorded).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

from .. import legacy_models
from ..generation import check_rows_against_reference, generate_steps, left_pad
from ..outcome import DefectObserved, ProbeSkipped
from . import core as sweep

PREFIX = "remote-"


def remote_types() -> list[str]:
    return [PREFIX + family for family in legacy_models.FAMILIES]


class RemoteSubject:
    """One tiny remote-code family, loaded once with the patches as installed (what the sweep reads from it: the
    modules its classes come from); every scenario loads its own copy."""

    kind = "remote-code"

    def __init__(self, model_type: str):
        self.model_type = model_type
        self.family = model_type[len(PREFIX):]
        try:
            self.model = load(self.family)
        except DefectObserved as exc:
            raise ProbeSkipped(f"the repo does not load, even with hf_genfix: {exc.message}") from exc

    def lacks(self, needs: Sequence[str]) -> str:
        return ""

    def rows(self) -> list[list[int]]:
        return [list(r) for r in legacy_models.rows_for(self.family)]


def load(family: str) -> Any:
    """The family's model, loaded afresh from a new copy of its repo (its code imported anew)."""
    with loaded(family) as model:
        return model


@contextlib.contextmanager
def loaded(family: str) -> Iterator[Any]:
    """The family's model, loaded afresh from a new copy of its repo, used inside the block: the repo and its
    module copy are gone afterwards. Used after that, the tuple-era qwen family got a DynamicCache its code cannot
    index ("'DynamicCache' object is not subscriptable", 5.24.0), with hf_genfix and not without: a model whose code
    is gone from disk is not one a user runs, so no scenario does that."""
    with legacy_models._family_repo(family) as repo:
        yield legacy_models._loaded(family, repo)


sweep.architecture_kind("remote-code", remote_types, RemoteSubject, 3)


def _greedy(s: RemoteSubject, what: str, **options: Any) -> dict:
    rows = s.rows()
    with loaded(s.family) as model:
        run = generate_steps(model, *left_pad(rows), max_new_tokens=4, pad_token_id=0, eos_token_id=None, **options)
        return check_rows_against_reference(model, rows, run, f"{s.family}: {what}", eos_token_id=[])


@sweep.scenario("remote-cached", kind="remote-code")
def remote_cached(s: RemoteSubject) -> dict:
    return _greedy(s, "cached generate() of a batch vs each row's no-cache forward")


@sweep.scenario("remote-uncached", kind="remote-code")
def remote_uncached(s: RemoteSubject) -> dict:
    return _greedy(s, "generate(use_cache=False) of a batch vs each row's no-cache forward", use_cache=False)


@sweep.scenario("remote-beam", kind="remote-code")
def remote_beam(s: RemoteSubject) -> dict:
    import torch

    (row,) = s.rows()[:1]
    ids = torch.tensor([row])
    common = dict(num_beams=3, max_new_tokens=5, do_sample=False, attention_mask=torch.ones_like(ids),
                  early_stopping=True, pad_token_id=0, eos_token_id=None)
    with loaded(s.family) as model, torch.no_grad():
        cached = model.generate(ids, use_cache=True, **common)[0, ids.shape[1]:].tolist()
        plain = model.generate(ids, use_cache=False, **common)[0, ids.shape[1]:].tolist()
    if cached != plain:
        raise DefectObserved(f"{s.family}: beam search: cached {cached} != uncached {plain}",
                             step=sweep._first_diff(cached, plain))
    return {"tokens": len(cached)}


@contextlib.contextmanager
def _formatting_every_record() -> Iterator[None]:
    """transformers' loggers at WARNING, their records going to one handler that formats each of them and lets a
    formatting error out (what pytest's log capture and strict logging setups do; Python's default handlers print
    "--- Logging error ---" and go on). ``warning_once``'s memory is cleared first, so a warning the process gave
    before is given again here. The library logger's own handlers are put back afterwards."""
    import logging

    class Formatting(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            self.format(record)

    root = logging.getLogger("transformers")
    handlers, level = list(root.handlers), root.level
    clear = getattr(getattr(logging.Logger, "warning_once", None), "cache_clear", None)
    if clear is not None:
        clear()
    for handler in handlers:
        root.removeHandler(handler)
    root.addHandler(Formatting())
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)


@sweep.scenario("remote-logged", kind="remote-code")
def remote_logged(s: RemoteSubject) -> dict:
    """A program whose log handler formats every record (pytest's log capture, a structured log handler) gets what
    a program without one gets, by definition: ``remote-cached`` under ``_formatting_every_record``. Recall missed
    remote-code-mask-warning on 5.2.0 without it: that release's mask helpers log their deprecation with a
    malformed call, harmless until a handler formats it."""
    with _formatting_every_record():
        return _greedy(s, "cached generate() of a batch, every log record formatted, vs each row's no-cache forward")


# The families whose code has its own decoding loop (ChatGLM's stream_generate, behind stream_chat).
_STREAM_FAMILIES = ("chatglm3",)


@sweep.scenario("remote-stream", kind="remote-code")
def remote_stream(s: RemoteSubject) -> dict:
    """The model's own sampling loop, greedy, on an equal-length batch: what it yields last equals greedy decoding
    by full no-cache forwards (``legacy_models.check_family_stream``)."""
    if s.family not in _STREAM_FAMILIES:
        raise ProbeSkipped(f"{s.family}: the repo has no decoding loop of its own")
    return legacy_models.check_family_stream(s.family)


@sweep.scenario("remote-reload", kind="remote-code")
def remote_reload(s: RemoteSubject) -> dict:
    """Save -> reload ≡ the saved model, by definition: the model saved next to its code and loaded back with
    ``from_pretrained(trust_remote_code=True)``, as a Hub repo is, has the buffers its ``__init__`` computes and
    every saved tensor with the saved values, and gives the saved model's logits
    (``legacy_models.check_family_reload_buffers`` and ``check_family_reload``)."""
    figures = legacy_models.check_family_reload_buffers(s.family)
    figures.update(legacy_models.check_family_reload(s.family))
    return figures


@sweep.scenario("remote-second-load", kind="remote-code")
def remote_second_load(s: RemoteSubject) -> dict:
    """A second load of the same repo in one process ≡ the first (the auto classes register the first load's
    classes): greedy ``generate()`` of the second load's model equals greedy no-cache decoding
    (``legacy_models.check_family(loads=2)``)."""
    return legacy_models.check_family(s.family, loads=2)


@sweep.scenario("remote-reload-moe", kind="remote-code")
def remote_reload_moe(s: RemoteSubject) -> dict:
    """remote-reload for the mixture-of-experts layout of the DeepSeek family (DeepSeek-V2's remote file: one module
    per expert, ``legacy_models.write_moe_repo``): saved and loaded back, the saved model's logits
    (``legacy_models.check_remote_moe_reload``). Run on the deepseek subject only: the layout is that family's."""
    if s.family != "deepseek":
        raise ProbeSkipped(f"{s.family}: the mixture-of-experts layout is the deepseek family's")
    return legacy_models.check_remote_moe_reload()

