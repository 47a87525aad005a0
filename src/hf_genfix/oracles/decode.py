"""The decode-loop oracles: a hand-written greedy loop built on ``model.prepare_inputs_for_generation``, for
decoder-only and for encoder-decoder models, and a chunk of new tokens fed after a cached prefix.

This is how custom loops, speculative-decoding and RL libraries and serving code use the method: each step
they pass only the whole sequence so far, the cache the last forward returned and the attention mask, and feed
what comes back to ``forward``. Every step's last logits must equal the reference (a no-cache forward over the
unpadded row, ``generation.check_rows_against_reference``). Two callers: one that grows the mask by a column of
ones per new token, and one that never grows it (the method must complete it).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

from .generation import GenRun, check_rows_against_reference, left_pad
from .outcome import DefectObserved
from .tiny import tiny_model

# Prompts of different lengths, so that the batch is left-padded; no pad (0), bos (1) or eos (2) inside.
DEFAULT_ROWS: tuple[tuple[int, ...], ...] = (
    (17, 44, 91, 23, 5),
    (60, 12, 77, 38, 101, 9, 64, 30),
    (88, 41, 7),
)

# What a broken decode step raises on the releases measured (shape errors, None where a tensor was needed).
UPSTREAM_ERRORS = (TypeError, ValueError, RuntimeError, AttributeError, IndexError)


@contextlib.contextmanager
def defect_on_error(what: str, errors: tuple = UPSTREAM_ERRORS) -> Iterator[None]:
    """An upstream exception inside the block is the defect showing: re-raised as ``DefectObserved`` naming
    ``what``."""
    try:
        yield
    except errors as exc:
        raise DefectObserved(f"{what}: {type(exc).__name__}: {exc}", error=type(exc).__name__) from exc


def prepare_cache_keyword() -> str:
    """The keyword the installed release's ``prepare_inputs_for_generation`` takes the cache under: ``cache`` from
    5.24 (where ``past_key_values`` is deprecated, to be removed in 5.40), ``past_key_values`` before. The oracles
    call upstream as a user of this release would, so that they trigger no deprecation of their own; a test of
    the old keyword names it."""
    import inspect

    from transformers.generation.utils import GenerationMixin

    params = inspect.signature(GenerationMixin.prepare_inputs_for_generation).parameters
    return "cache" if "cache" in params else "past_key_values"


def manual_loop(
    model: Any,
    rows: Sequence[Sequence[int]] = DEFAULT_ROWS,
    steps: int = 4,
    grow_mask: bool = True,
    cache_key: str | None = None,
    feed: str = "full",
    pad_id: int = 0,
) -> GenRun:
    """Greedy decoding by hand: ``prepare_inputs_for_generation(ids, <cache_key>=cache, attention_mask=mask)``
    (``cache_key`` by default the release's own, ``prepare_cache_keyword``) then ``forward`` on what it returned,
    ``steps`` times. Returns the per-step last logits like generate_steps.
    With ``grow_mask=False`` the caller keeps passing the prompt's mask; with ``feed="new"`` it passes only the
    last token after the first step (the classic loop) instead of the whole sequence."""
    import torch

    from ..helpers.decode import cache_from_outputs

    cache_key = cache_key or prepare_cache_keyword()
    ids, mask = left_pad(rows, pad_id)
    width = ids.shape[1]
    cache = None
    step_logits = []
    with torch.no_grad():
        for _ in range(steps):
            given = ids if feed == "full" or cache is None else ids[:, -1:]
            inputs = model.prepare_inputs_for_generation(given, **{cache_key: cache}, attention_mask=mask)
            out = model(**inputs)
            logits = out.logits[:, -1, :]
            step_logits.append(logits)
            cache = cache_from_outputs(out)
            ids = torch.cat([ids, logits.argmax(-1, keepdim=True)], dim=-1)
            if grow_mask:
                mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
    return GenRun(sequences=ids, step_logits=step_logits, prompt_width=width)


def check_manual_loop(
    model_or_type: Any,
    grow_mask: bool = True,
    rows: Sequence[Sequence[int]] = DEFAULT_ROWS,
    steps: int = 4,
    cache_key: str | None = None,
    feed: str = "full",
    **tiny_overrides: Any,
) -> dict[str, Any]:
    """Run ``manual_loop`` on a model (or a tiny model of that type) and compare every step with the reference;
    an upstream exception inside the loop is the defect showing and is re-raised as ``DefectObserved``."""
    model = tiny_model(model_or_type, **tiny_overrides) if isinstance(model_or_type, str) else model_or_type
    name = getattr(getattr(model, "config", None), "model_type", type(model).__name__)
    cache_key = cache_key or prepare_cache_keyword()
    how = f"{'mask grown' if grow_mask else 'mask never grown'}, {feed} ids, cache as {cache_key}"
    what = f"{name}: manual loop over prepare_inputs_for_generation ({how})"
    with defect_on_error(what):
        run = manual_loop(model, rows, steps, grow_mask=grow_mask, cache_key=cache_key, feed=feed)
    return check_rows_against_reference(model, rows, run, what)


# -- encoder-decoder models ---------------------------------------------------------------------------------------
# Tiny configs (hidden 32, 2 + 2 layers, vocab 128) of the three decoder families a hand-written seq2seq loop meets:
# T5 (relative position bias), BART (learned positions from the cache length), Whisper (audio encoder).
SEQ2SEQ: dict[str, tuple[str, dict[str, Any]]] = {
    "t5": ("T5ForConditionalGeneration",
           dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, decoder_start_token_id=0)),
    "bart": ("BartForConditionalGeneration",
             dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                  encoder_ffn_dim=64, decoder_ffn_dim=64, decoder_start_token_id=2, forced_eos_token_id=None)),
    "whisper": ("WhisperForConditionalGeneration",
                dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                     decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=8,
                     max_source_positions=16, max_target_positions=64, decoder_start_token_id=1)),
}

# Encoder inputs of different lengths (the mask says which), no pad (0) inside.
SEQ2SEQ_ROWS: tuple[tuple[int, ...], ...] = ((17, 44, 91, 23, 5), (60, 12, 77))


def tiny_seq2seq(model_type: str, seed: int = 0) -> Any:
    """The tiny encoder-decoder model of ``model_type`` (a key of ``SEQ2SEQ``)."""
    import transformers

    from .outcome import ProbeSkipped

    class_name, overrides = SEQ2SEQ[model_type]
    model_class = getattr(transformers, class_name, None)
    if model_class is None:
        raise ProbeSkipped(f"{class_name} is not in this transformers release")
    return tiny_model(model_type, seed=seed, model_class=model_class, **overrides)


def encoder_inputs(model: Any, rows: Sequence[Sequence[int]] = SEQ2SEQ_ROWS) -> dict[str, Any]:
    """Keyword arguments of the encoder for a batch of ``len(rows)``: ids with their mask (padded on the right),
    or, for an audio encoder, seeded random features."""
    import torch

    from ..helpers.decode import forward_spec
    from .generation import right_pad

    if "input_features" in forward_spec(model).names:
        generator = torch.Generator().manual_seed(0)
        frames = 2 * model.config.max_source_positions
        features = torch.randn(len(rows), model.config.num_mel_bins, frames, generator=generator, device="cpu")
        return {"input_features": features.to(device=model.device, dtype=model.dtype)}
    ids, mask = right_pad(rows)
    return {"input_ids": ids, "attention_mask": mask}


def manual_seq2seq_loop(
    model: Any,
    rows: Sequence[Sequence[int]] = SEQ2SEQ_ROWS,
    steps: int = 4,
    cache_key: str | None = None,
    feed: str = "full",
) -> tuple[Any, list, Any, dict]:
    """Greedy decoding by hand with an encoder-decoder model: the encoder runs once, then each step calls
    ``prepare_inputs_for_generation(decoder ids, <cache_key>=cache, encoder_outputs=..., attention_mask=encoder
    mask, use_cache=True)`` and ``forward`` on what it returned. ``feed="full"`` passes the whole decoder
    sequence (start token first), ``feed="new"`` only the last token once there is a cache. Returns (decoder ids,
    per-step last logits, encoder outputs, encoder inputs)."""
    import torch

    from ..helpers.decode import cache_from_outputs

    cache_key = cache_key or prepare_cache_keyword()
    source = encoder_inputs(model, rows)
    start = model.generation_config.decoder_start_token_id
    start = start if start is not None else model.config.decoder_start_token_id
    with torch.no_grad():
        encoded = model.get_encoder()(**source)
        extra = {"attention_mask": source["attention_mask"]} if "attention_mask" in source else {}
        decoder_ids = torch.full((len(rows), 1), start, dtype=torch.long)
        cache, step_logits = None, []
        for _ in range(steps):
            given = decoder_ids if feed == "full" or cache is None else decoder_ids[:, -1:]
            inputs = model.prepare_inputs_for_generation(given, **{cache_key: cache}, encoder_outputs=encoded,
                                                         use_cache=True, **extra)
            out = model(**inputs)
            step_logits.append(out.logits[:, -1, :])
            cache = cache_from_outputs(out)
            decoder_ids = torch.cat([decoder_ids, out.logits[:, -1:].argmax(-1)], dim=-1)
    return decoder_ids, step_logits, encoded, extra


def check_manual_seq2seq_loop(
    model_or_type: Any,
    steps: int = 4,
    cache_key: str | None = None,
    feed: str = "full",
) -> dict[str, Any]:
    """``manual_seq2seq_loop`` against the reference: step ``t``'s logits equal the decoder logits of a no-cache
    forward over the decoder ids so far with the same encoder output (atol 1e-4). An upstream exception inside
    the loop is the defect showing and is re-raised as ``DefectObserved``."""
    import torch

    from .precision import tolerance
    from .reference import max_diff

    ATOL = tolerance()

    model = tiny_seq2seq(model_or_type) if isinstance(model_or_type, str) else model_or_type
    cache_key = cache_key or prepare_cache_keyword()
    what = (f"{model.config.model_type}: manual encoder-decoder loop over prepare_inputs_for_generation "
            f"({feed} decoder ids, cache as {cache_key})")
    with defect_on_error(what):
        decoder_ids, step_logits, encoded, extra = manual_seq2seq_loop(model, steps=steps, cache_key=cache_key,
                                                                       feed=feed)
    with torch.no_grad():
        reference = model(encoder_outputs=encoded, decoder_input_ids=decoder_ids[:, :-1], use_cache=False,
                          **extra).logits
    worst = 0.0
    for t, logits in enumerate(step_logits):
        diff = max_diff(logits, reference[:, t])
        worst = max(worst, diff)
        if not diff <= ATOL:
            raise DefectObserved(f"{what}: step {t}: max |logit diff| {diff:.3g} vs a no-cache forward of the "
                                 f"decoder ids with the same encoder output (atol {ATOL})", max_logit_diff=diff, step=t)
    return {"max_logit_diff": worst, "steps_compared": len(step_logits) * decoder_ids.shape[0]}


# -- a chunk fed after a cached prefix ----------------------------------------------------------------------------
CHUNK_TOKENS: tuple[int, ...] = (17, 44, 91, 23, 5, 60, 12, 77, 38, 101, 9, 64, 30)
CHUNK_PREFIX = 3
# How the caller says that the chunk's ids are new: what prepare_inputs_for_generation is given besides the cache.
CHUNK_STATEMENTS = ("cache_position", "position_ids", "mask-over-cache-and-chunk", "nothing")


def chunk_after_cache(model: Any, stated: str = "cache_position") -> tuple[Any, Any]:
    """A cache holding a 3-token prefix (a system prompt, an earlier turn), then the next 10 tokens through
    ``prepare_inputs_for_generation(chunk, past_key_values=cache, use_cache=True, <stated>)`` and ``forward``.
    Returns (the chunk's logits, the same positions of a no-cache forward over all 13 tokens)."""
    import torch

    from ..helpers.decode import cache_from_outputs

    ids = torch.tensor([CHUNK_TOKENS])
    new = torch.arange(CHUNK_PREFIX, len(CHUNK_TOKENS))
    given = {"cache_position": {"cache_position": new}, "position_ids": {"position_ids": new[None]},
             "mask-over-cache-and-chunk": {"attention_mask": torch.ones_like(ids)}, "nothing": {}}[stated]
    with torch.no_grad():
        reference = model(ids, use_cache=False).logits[:, CHUNK_PREFIX:]
        cache = cache_from_outputs(model(ids[:, :CHUNK_PREFIX], use_cache=True))
        inputs = model.prepare_inputs_for_generation(ids[:, CHUNK_PREFIX:], **{prepare_cache_keyword(): cache},
                                                     use_cache=True, **given)
        keep = inputs.get("logits_to_keep")
        if isinstance(keep, int) and not isinstance(keep, bool) and keep > 0:
            # The model's own choice of how many positions get logits (Falcon-H1 sets config.num_logits_to_keep,
            # 1, in its prepare_inputs_for_generation: generation needs the last only). It slices the head's output,
            # not the ids fed: keep them all so that every fed token is checked (a chunk cut to its last token
            # still gives 1 position).
            inputs["logits_to_keep"] = 0
        return model(**inputs).logits, reference


def check_chunk_after_cache(model_or_type: Any, stated: str = "cache_position") -> dict[str, Any]:
    """``chunk_after_cache`` against its reference: every one of the 10 new tokens fed, logits within atol."""
    from .precision import tolerance
    from .reference import max_diff

    ATOL = tolerance()

    model = tiny_model(model_or_type) if isinstance(model_or_type, str) else model_or_type
    what = f"{model.config.model_type}: 10 tokens after a cached 3-token prefix, new tokens stated by {stated}"
    with defect_on_error(what):
        logits, reference = chunk_after_cache(model, stated)
    if logits.shape != reference.shape:
        raise DefectObserved(f"{what}: {logits.shape[1]} of {reference.shape[1]} tokens fed",
                             max_logit_diff=float("inf"))
    diff = max_diff(logits, reference)
    if not diff <= ATOL:
        raise DefectObserved(f"{what}: max |logit diff| {diff:.3g} vs a no-cache forward (atol {ATOL})",
                             max_logit_diff=diff)
    return {"max_logit_diff": diff, "steps_compared": reference.shape[1]}
