"""decoding-prompt-lookup-no-eos: prompt-lookup decoding without an eos token raises ``TypeError``.

The defect. ``PromptLookupCandidateGenerator.get_candidates`` cuts its candidates at the first eos token with
``isin(candidates, self.eos_token_id)``, and ``generate()`` builds the generator with the config's eos tensor --
``None`` when the model has no eos or the caller passes ``eos_token_id=None`` (a common way to make a run go to
``max_new_tokens``). ``torch.isin`` does not take ``None``: ``TypeError: isin() received an invalid combination
of arguments - got (Tensor, NoneType)`` as soon as a look-up finds a match. Measured on 4.44.0 - 5.12.1; up to
4.43 the look-up had no eos cut, and 5.13.0 guards it with ``if self.eos_token_id is not None``.

Detection. A tiny Llama, a prompt that repeats itself (so the look-up matches), ``prompt_lookup_num_tokens=3``,
``eos_token_id=None``, 8 new tokens: the run must complete with plain greedy's tokens.

Correction. ``GenerationMixin._get_candidate_generator`` is wrapped: a prompt-lookup generator built without an
eos tensor gets an empty one (on the device of the input ids), which ``isin`` accepts and which matches no token
-- what the 5.13 guard does. The generator is made per ``generate()`` call; nothing else reads the attribute.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments

FACTORY = "transformers.generation.utils:GenerationMixin._get_candidate_generator"


def install(patcher: Any) -> None:
    patcher.require(FACTORY, "generation_config", "input_ids")
    patcher.wrap(FACTORY, _get_candidate_generator)


def _get_candidate_generator(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    generator = wrapped(*args, **kwargs)
    if type(generator).__name__ != "PromptLookupCandidateGenerator":
        return generator
    if getattr(generator, "eos_token_id", 0) is not None:
        return generator
    input_ids = bound_arguments(wrapped, args, kwargs).get("input_ids")
    device = input_ids.device if isinstance(input_ids, torch.Tensor) else None
    generator.eos_token_id = torch.empty(0, dtype=torch.long, device=device)
    return generator
