"""decoding-prompt-lookup-length: prompt-lookup decoding returns more than ``max_new_tokens`` new tokens.

The defect. ``PromptLookupCandidateGenerator.get_candidates`` copies up to ``prompt_lookup_num_tokens`` tokens
that followed an earlier occurrence of the last n-gram, and caps them with ``min(end, input_length,
max_length)`` -- bounds on where the copied span ends in the sequence, not on how many new tokens are left. Near
the end of the budget the candidates run past ``max_length``; when the model accepts them all, the assisted
decoding loop keeps them and adds its own token, so ``generate()`` returns up to ``prompt_lookup_num_tokens``
tokens too many: the first ``max_new_tokens`` are plain greedy's, then extra ones (41 for 40 on a tiny Falcon,
46 for 40 on a tiny Llama; every architecture, whenever the look-up matches late in the run). Its own comment
says "Don't generate more than `max_length - 1` candidates", which only its early return for one token left
implements. Measured on 4.40.2 (the earliest run) to 5.13.0. 5.14.0 cuts the accepted tokens to the budget in
``_assisted_decoding`` (for MTP drafts, which are never capped); the look-up still drafts past it there.

Detection. A tiny Llama, a 12-token prompt whose greedy continuation repeats itself, prompt lookup with 10-token
candidates, 40 new tokens: exactly plain greedy's 40 tokens. (Tokens only: up to 4.44 assisted decoding returns
one 3-D logits entry per round, not per token, which is no per-step oracle.)

Correction. ``get_candidates`` is wrapped: the candidates it returns are cut to ``max_length - 1 -
input_length`` new tokens (the target model adds one more), so a fully accepted draft ends exactly at
``max_length``. The tokens kept are the ones upstream keeps (greedy's); only those past the budget go.
"""

from __future__ import annotations

from typing import Any

from .sliding_window_image_mask import bound_arguments

CANDIDATES = "transformers.generation.candidate_generator:PromptLookupCandidateGenerator.get_candidates"


def install(patcher: Any) -> None:
    patcher.require(CANDIDATES, "input_ids")
    patcher.wrap(CANDIDATES, _get_candidates)


def _get_candidates(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    result = wrapped(*args, **kwargs)
    input_ids = bound_arguments(wrapped, args, kwargs).get("input_ids")
    max_length = getattr(instance, "max_length", None)
    if not isinstance(result, tuple) or not result or input_ids is None or not isinstance(max_length, int):
        return result
    candidates, length = result[0], input_ids.shape[-1]
    room = max(max_length - 1 - length, 0)
    if candidates.shape[-1] - length <= room:
        return result
    if room == 0:
        # What upstream returns when it has no candidate: decoding goes on one token at a time.
        return (input_ids,) + tuple(None for _ in result[1:])
    extra = tuple(None if logits is None else logits[:, :room] for logits in result[1:])
    return (candidates[:, : length + room],) + extra


def probe() -> dict:
    import torch

    from hf_genfix.oracles import DefectObserved, tiny_model
    from hf_genfix.oracles.sliding import prompts

    model = tiny_model("llama")
    ids = torch.tensor(prompts(12, seed=1))
    # eos 120: never produced by this greedy run, so both runs go to max_new_tokens (and no eos-less look-up).
    common = dict(attention_mask=torch.ones_like(ids), max_new_tokens=40, do_sample=False, pad_token_id=0,
                  eos_token_id=120)
    with torch.no_grad():
        greedy = model.generate(ids, **common)[0, ids.shape[1]:].tolist()
        looked = model.generate(ids, prompt_lookup_num_tokens=10, **common)[0, ids.shape[1]:].tolist()
    what = "prompt lookup (10-token candidates), 12 + 40 tokens"
    if len(greedy) != 40:
        raise RuntimeError(f"plain greedy stopped after {len(greedy)} tokens: the probe's eos choice is wrong")
    if looked[:40] != greedy:
        raise DefectObserved(f"{what}: tokens differ from plain greedy")
    if len(looked) != 40:
        raise DefectObserved(f"{what}: {len(looked)} new tokens for max_new_tokens=40 (the first 40 are plain "
                             f"greedy's)", tokens=len(looked))
    return {"tokens": len(looked)}
