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

Correction. ``GenerationMixin._assisted_decoding`` is wrapped, and only its result is touched: when a
prompt-lookup run returns more than ``max_length`` tokens, the sequences are cut to ``max_length`` (the extra
tokens are greedy's continuation past the budget), per-token ``scores`` / ``logits`` to the same count, and a
returned cache that can ``crop`` to ``max_length - 1``, as 5.14 leaves it. Cutting the drafted candidates instead
(the first version of this patch) changed the width of the verifying forward even where upstream kept the right
number of tokens, and so its logits by float rounding (4.5e-8 on 4.46.3): where upstream is right, the call must
stay bitwise upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments

ASSISTED = "transformers.generation.utils:GenerationMixin._assisted_decoding"


def install(patcher: Any) -> None:
    # 4.x passes the candidate generator in; 5.x builds it inside from the generation config.
    patcher.require(ASSISTED, "input_ids", "generation_config")
    patcher.wrap(ASSISTED, _assisted_decoding)


def _assisted_decoding(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    result = wrapped(*args, **kwargs)
    call = bound_arguments(wrapped, args, kwargs)
    generator, config, prompt = call.get("candidate_generator"), call.get("generation_config"), call.get("input_ids")
    lookup = (type(generator).__name__ == "PromptLookupCandidateGenerator" if generator is not None
              else getattr(config, "prompt_lookup_num_tokens", None) is not None
              and call.get("assistant_model") is None)
    if not lookup or config is None or prompt is None:
        return result
    max_length = getattr(config, "max_length", None)
    sequences = getattr(result, "sequences", result)
    if not isinstance(max_length, int) or getattr(sequences, "ndim", 0) != 2 or sequences.shape[-1] <= max_length:
        return result
    if sequences is result:
        return result[:, :max_length]
    new, keep = sequences.shape[-1] - prompt.shape[-1], max_length - prompt.shape[-1]
    result.sequences = sequences[:, :max_length]
    for name in ("scores", "logits"):
        per_step = getattr(result, name, None)
        if isinstance(per_step, tuple) and len(per_step) == new:  # one entry per token (4.45+)
            setattr(result, name, per_step[:keep])
    cache = getattr(result, "past_key_values", None)
    if cache is not None and hasattr(cache, "crop"):
        cache.crop(max_length - 1)
    return result
