"""Sliding-window oracles: tiny models with a window of 8, and the checks the sliding-window family shares.

Built on ``generation.py`` (``left_pad``, ``generate_steps``, ``check_rows_against_reference``). Two oracles:

- ``check_past_window``: every step of a cached ``generate()`` (batch 1 or a left-padded batch) against one
  no-cache forward of each row's final sequence (float32, atol 1e-4);
- ``check_same_as_greedy``: a decoding mode that drafts and rewinds the cache (assisted decoding with an
  n-token draft, prompt lookup, Gemma-4 MTP drafting) gives exactly the tokens of plain greedy decoding, and its
  per-step logits match the same no-cache forward.

``sliding_model(name)`` builds the architectures the family is checked on (``MODELS``), each with
``sliding_window=8`` and, where the architecture mixes them, one sliding and one full-attention layer, so that a
few dozen tokens go well past the window. ``held_tokens(cache)`` says how many tokens each cache layer keeps
(the memory side of the family).
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from .generation import Rows, check_rows_against_reference, generate_steps, left_pad
from .outcome import DefectObserved, ProbeSkipped
from .precision import cast
from .reference import reference_logits
from .tiny import tiny_config, tiny_model

WINDOW = 8

_S, _F = "sliding_attention", "full_attention"
_GEMMA4 = dict(head_dim=8, global_head_dim=8, hidden_size_per_layer_input=8, vocab_size_per_layer_input=128)

# name -> (model_type, config overrides on top of oracles.tiny and sliding_window=WINDOW). Hybrid architectures
# get an explicit layer_types so that the tiny model has both kinds of layer (their default patterns would give
# two sliding layers). Gemma-4 "shared-kv" is the small-model layout (the last layers reuse earlier layers' KV);
# plain "gemma4" is the large-model layout (num_kv_shared_layers=0).
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "mistral": ("mistral", {}),
    "qwen2": ("qwen2", dict(use_sliding_window=True, max_window_layers=1, layer_types=[_F, _S])),
    "qwen3": ("qwen3", dict(use_sliding_window=True, max_window_layers=1, layer_types=[_F, _S])),
    "gemma2": ("gemma2", dict(layer_types=[_S, _F])),
    "gemma3": ("gemma3_text", dict(layer_types=[_S, _F])),
    "gemma4": ("gemma4_text", dict(_GEMMA4, layer_types=[_S, _F])),
    "gemma4-shared-kv": ("gemma4_text", dict(_GEMMA4, num_hidden_layers=4, num_kv_shared_layers=2,
                                             layer_types=[_S, _F, _S, _F])),
    "cohere2": ("cohere2", dict(layer_types=[_S, _F])),
    "gpt-oss": ("gpt_oss", dict(head_dim=8, num_local_experts=4, num_experts_per_tok=2, layer_types=[_S, _F])),
}


def sliding_model(name: str, attn: str = "eager", seed: int = 0, window: int = WINDOW, **overrides: Any) -> Any:
    """The tiny model ``MODELS[name]`` with ``sliding_window=window`` (``ProbeSkipped`` where it cannot exist)."""
    model_type, defaults = MODELS[name]
    kwargs = dict(defaults, sliding_window=window, **overrides)
    if attn != "eager":
        kwargs["attn_implementation"] = attn
    try:
        return tiny_model(model_type, seed=seed, **kwargs)
    except ProbeSkipped as exc:
        cause = exc.__cause__
        if attn == "eager" or "attention" not in str(cause):
            raise
        # e.g. "Gemma2ForCausalLM does not support ... scaled_dot_product_attention yet" (5.24)
        raise ProbeSkipped(f"{name} with {attn} attention cannot be built here: {str(cause).splitlines()[0][:160]}")
    except (ValueError, ImportError) as exc:
        raise ProbeSkipped(f"{name} with {attn} attention cannot be built here: {exc}") from exc


def gemma4_drafter(target: Any, seed: int = 1, window: int = WINDOW) -> Any:
    """A tiny Gemma-4 assistant (MTP drafter) for ``target``, a Gemma-4 model from ``sliding_model`` (same window)."""
    import torch

    try:
        from transformers import Gemma4AssistantConfig, Gemma4AssistantForCausalLM
    except ImportError as exc:
        raise ProbeSkipped("this release has no Gemma-4 assistant (MTP drafter)") from exc
    # The drafter attends to the target's KV states: same head sizes. They are taken from _GEMMA4 rather than
    # from the target's config, whose per-layer attributes (5.15+) are not plain attributes any more.
    text = tiny_config(
        "gemma4_text", sliding_window=window, num_hidden_layers=2, layer_types=[_S, _F],
        head_dim=_GEMMA4["head_dim"], global_head_dim=_GEMMA4["global_head_dim"], hidden_size_per_layer_input=0,
        vocab_size_per_layer_input=0, num_kv_shared_layers=2,
    )
    config = Gemma4AssistantConfig(text_config=text.to_dict(), backbone_hidden_size=target.config.hidden_size,
                                   num_centroids=8, centroid_intermediate_top_k=2)
    config._attn_implementation = getattr(target.config, "_attn_implementation", None) or "eager"
    torch.manual_seed(seed)
    try:
        with torch.no_grad(), torch.device("cpu"):  # CUDA's generator would draw other weights for the seed
            model = Gemma4AssistantForCausalLM(config)
        return cast(model.float())
    except ValueError as exc:
        if "layer types producing a cache" not in str(exc):
            raise
        # 5.23.0 rejects every assistant config whose layers are all KV-shared -- what an assistant is; 5.24 not.
        raise ProbeSkipped(f"this release cannot build a Gemma-4 assistant: {exc}") from exc


def drafting(assistant: Any, tokens: int) -> dict[str, Any]:
    """``generate()`` arguments for assisted decoding whose drafts are exactly ``tokens`` long.

    The draft length is read from the assistant's generation config; the default "heuristic" schedule changes it
    every round, and the default confidence threshold (0.4 from 4.47) stops a random tiny drafter after one token.
    """
    gc = assistant.generation_config
    gc.num_assistant_tokens = tokens
    gc.num_assistant_tokens_schedule = "constant"
    gc.assistant_confidence_threshold = 0.0
    return {"assistant_model": assistant}


def prompts(*lengths: int, seed: int = 0) -> list[list[int]]:
    """Deterministic prompts of ordinary ids (3..127: never pad, bos or eos) for the tiny models' vocabulary."""
    rng = random.Random(seed)
    return [[rng.randrange(3, 128) for _ in range(n)] for n in lengths]


def reference_caveat(model: Any) -> str | None:
    """Why the no-cache forward cannot serve as the reference for ``model`` on this release, or None.

    Gemma-4's KV-shared layers share only through a cache before 5.11: without one (the reference) they compute
    their own keys, so a correct cached run differs from it at the first token (0.16-0.31 on the tiny model, 5.5).
    """
    import transformers
    from packaging.version import Version

    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    if getattr(config, "model_type", None) == "gemma4_text" and getattr(config, "num_kv_shared_layers", 0):
        if Version(Version(transformers.__version__).base_version) < Version("5.11.0"):
            return "Gemma-4 KV-shared layers ignore the sharing without a cache before 5.11: no no-cache reference"
    return None


def _reference_or_skip(model: Any) -> None:
    caveat = reference_caveat(model)
    if caveat:
        raise ProbeSkipped(caveat)


def check_past_window(
    model: Any, rows: Rows, max_new_tokens: int, what: str, **generate_kwargs: Any
) -> dict[str, Any]:
    """Greedy ``generate()`` on the left-padded ``rows``; every row and step against one no-cache forward of the row.

    Rows run to ``max_new_tokens`` (no eos stops them), so ``len(row) + max_new_tokens`` is how far past the window
    the run goes. ``ProbeSkipped`` where the no-cache forward is no reference (``reference_caveat``).
    """
    _reference_or_skip(model)
    ids, mask = left_pad(rows)
    kwargs: dict[str, Any] = dict(pad_token_id=0, eos_token_id=None)
    kwargs.update(generate_kwargs)
    run = generate_steps(model, ids, mask, max_new_tokens=max_new_tokens, **kwargs)
    _ran_to_the_end(run, max_new_tokens, what)
    figures = check_rows_against_reference(model, rows, run, what, eos_token_id=[])
    figures.update(rows=len(rows), tokens=ids.shape[1] + max_new_tokens)
    return figures


def check_same_as_greedy(
    model: Any, row: Sequence[int], max_new_tokens: int, what: str, suppress_pad: bool = False,
    **decoding_kwargs: Any
) -> dict[str, Any]:
    """``decoding_kwargs`` (an assistant, prompt lookup, ...) give exactly plain greedy's tokens for ``row``.

    Plain greedy is itself checked against the no-cache reference first (so that equality means something), then
    the mode's tokens must equal greedy's and the mode's per-step logits must match the same reference. The eos id
    is one that plain greedy never produces (prompt lookup needs an eos id on some releases), so both runs go to
    ``max_new_tokens``. ``ProbeSkipped`` where the no-cache forward is no reference (``reference_caveat``).
    ``suppress_pad`` (the sweep's scenarios): the padding id (0) is never generated (``suppress_tokens`` on both
    runs, as in the sweep's ``left-padded``): a model that finds its pads by value (fairseq positions:
    Speech2Text2, which generates it at step 2 of the prompt-lookup row under the calibrated weights) would
    otherwise be judged against a reference that, by definition, skips that token as a pad. The logits are still
    compared whole; the greedy choice is checked among the other tokens.
    """
    import torch

    _reference_or_skip(model)
    rows = [list(row)]
    ids, mask = left_pad(rows)
    if suppress_pad:
        decoding_kwargs = dict(decoding_kwargs, suppress_tokens=[0])

    def steps(**kwargs: Any) -> Any:
        return generate_steps(model, ids, mask, max_new_tokens=max_new_tokens, pad_token_id=0, **kwargs)

    def check(run: Any, label: str) -> dict[str, Any]:
        # The logits are compared whole (a move of the pad's logit too); the greedy choice among the tokens
        # generate() could choose (the pad suppressed) is checked apart.
        figures = check_rows_against_reference(model, rows, run, label, eos_token_id=[],
                                               check_tokens=not suppress_pad)
        if suppress_pad:
            _greedy_without_pad(model, rows[0], run, label)
        return figures

    greedy = steps(eos_token_id=None, **({"suppress_tokens": [0]} if suppress_pad else {}))
    _ran_to_the_end(greedy, max_new_tokens, f"{what} (plain greedy)")
    figures = check(greedy, f"{what}: plain greedy")
    eos = _unused_token(model, greedy.sequences[0].tolist())
    run = steps(eos_token_id=eos, **decoding_kwargs)
    expected, actual = greedy.new_tokens(0), run.new_tokens(0)
    if len(actual) > len(expected) and actual[: len(expected)] == expected:
        raise DefectObserved(f"{what}: {len(actual)} new tokens for max_new_tokens={max_new_tokens} (the first "
                             f"{len(expected)} are plain greedy's)", step=len(expected))
    checked = run.step_logits and torch.is_tensor(run.step_logits[0])
    if actual != expected:
        step = next((i for i, (a, b) in enumerate(zip(actual, expected)) if a != b), min(len(actual), len(expected)))
        gap = tie_gap(model, rows[0], expected, actual, step)
        if gap is None or not gap < TIE or not checked:
            raise DefectObserved(
                f"{what}: tokens differ from plain greedy from step {step} ({len(actual)} vs {len(expected)} tokens)"
                + (f"; the reference's logits of the two tokens there differ by {gap:.3g}" if gap is not None else ""),
                step=step,
            )
        # A numerical tie: the no-cache reference scores both tokens alike (GPT-SW3 on 4.46 and 4.57: 2.4e-07 at
        # step 11 of assisted decoding), so either is greedy's up to rounding. The mode is judged by its own logits
        # below, against the reference of the sequence it chose, as every step of it is.
        figures["tie_at_step"] = step
    if checked:
        mode = check(run, what)
        figures["max_logit_diff"] = max(figures["max_logit_diff"], mode["max_logit_diff"])
    figures.update(tokens=ids.shape[1] + max_new_tokens)
    return figures


def _greedy_without_pad(model: Any, row: Sequence[int], run: Any, what: str) -> None:
    """Each generated token is the greedy choice among the tokens other than the pad (0), by the step's own logits or
    the no-cache reference's (``check_rows_against_reference``'s token check, with the pad suppressed)."""
    new = run.new_tokens(0)[: len(run.step_logits)]
    ref = reference_logits(model, list(row) + new)
    for t, token in enumerate(new):
        expected, actual = ref[len(row) - 1 + t].clone(), run.step_logits[t][0].float().clone()
        expected[0] = actual[0] = float("-inf")
        if int(actual.argmax()) != token and int(expected.argmax()) != token:
            raise DefectObserved(f"{what}: step {t}: generated token {token} is not the greedy choice "
                                 f"{int(expected.argmax())} of the reference (the pad suppressed)", step=t)


# Two continuations that part where the no-cache reference scores both tokens within this of each other are a
# numerical tie, not a defect (the sweep's prompt-lookup and beam checks use the same margin).
TIE = 1e-3


def tie_gap(model: Any, row: Sequence[int], expected: list[int], actual: list[int], step: int) -> float | None:
    """|logit(a) - logit(b)| of the reference at the step where two continuations part (None where one ends)."""
    if step >= min(len(expected), len(actual)):
        return None
    from .reference import reference_logits

    logits = reference_logits(model, list(row) + expected[:step])[-1]
    return abs(float(logits[expected[step]]) - float(logits[actual[step]]))


def probe_assisted(draft_tokens: int, known: tuple[type, str], name: str = "mistral", prompt: int = 12,
                   new_tokens: int = 2 * WINDOW) -> dict[str, Any]:
    """The probe of a drafting defect: ``check_same_as_greedy`` for assisted decoding of ``name`` with
    ``draft_tokens``-token drafts from a second model of the same type (another seed). The exception the defect is
    known by -- ``known`` = (type, a substring of its message) -- is raised again as ``DefectObserved``."""
    target, drafter = sliding_model(name), sliding_model(name, seed=1)
    what = f"assisted decoding with {draft_tokens}-token drafts, {prompt} + {new_tokens} tokens, window {WINDOW}"
    try:
        return check_same_as_greedy(target, prompts(prompt)[0], new_tokens, what, **drafting(drafter, draft_tokens))
    except known[0] as exc:
        if known[1] not in str(exc):
            raise
        raise DefectObserved(f"{what}: {type(exc).__name__}: {exc}") from exc


def held_tokens(cache: Any) -> list[int]:
    """How many tokens each layer of ``cache`` holds (its key tensor's sequence length; 0 for an empty layer)."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        keys = [getattr(layer, "keys", None) for layer in layers]
    elif hasattr(cache, "key_cache"):
        keys = list(cache.key_cache)
    else:
        keys = [kv[0] for kv in cache]
    return [int(k.shape[-2]) if k is not None and getattr(k, "dim", lambda: 0)() >= 2 else 0 for k in keys]


def _ran_to_the_end(run: Any, max_new_tokens: int, what: str) -> None:
    got = run.sequences.shape[1] - run.prompt_width
    if got != max_new_tokens:
        raise DefectObserved(f"{what}: generate() stopped after {got} of {max_new_tokens} new tokens")


def _unused_token(model: Any, sequence: Sequence[int]) -> int:
    """An ordinary id absent from ``sequence``: as eos it never stops a run that reproduces ``sequence``."""
    vocab = int(model.config.get_text_config().vocab_size if hasattr(model.config, "get_text_config")
                else model.config.vocab_size)
    seen = set(sequence)
    for token in range(vocab - 1, 2, -1):
        if token not in seen:
            return token
    raise ProbeSkipped("every id of the tiny vocabulary occurs in the run: no id is free to serve as eos")
