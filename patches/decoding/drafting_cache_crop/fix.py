"""drafting-cache-crop: on 5.15.x assisted decoding rewinds the drafter's cache by the wrong amount.

The defect. After every round of assisted decoding, ``AssistedCandidateGenerator._update_past_and_masks`` must
crop the drafter's cache back to the sequence the target accepted (less the tokens it will feed again):
``len(input_ids) - 1 - remove_from_pkv - num_added_tokens`` tokens, the size 5.14 and 5.16 compute. 5.15.0 and
5.15.1 instead remove ``remove_from_pkv + num_added_tokens`` tokens (one, with a drafter that shares the
target's tokenizer) whatever the drafter proposed and the target rejected, so the cache keeps rejected drafts
and grows every round (26 entries for a 13-token sequence). Drafts then come from a corrupted cache; with 4 or
more draft tokens the drafter is soon fed an empty input and raises ``RuntimeError: cannot reshape tensor of 0
elements``, on every architecture (a tiny Llama, no window). Measured: 5.15.0 and 5.15.1 fail; 5.14.0, 5.14.1,
5.16.0 and 5.16.1 pass (5.16.0 computes the target size from ``input_ids`` again).

Detection. A tiny Llama target and a second tiny Llama as drafter, 4-token drafts (constant schedule, no
confidence threshold), 12 + 16 tokens: tokens equal to plain greedy, logits equal to a no-cache forward, and at
every drafter forward its cache holds exactly the tokens before the ones it is fed
(``oracles.drafting.check_assisted``).

Correction. ``AssistedCandidateGenerator._update_past_and_masks`` is wrapped in place (subclasses reach it
through ``super()``): the wrapper computes how many tokens the cache holds beyond 5.16's target size and calls
the original with exactly that as ``remove_from_pkv`` (and ``num_added_tokens=0``), so the original's own crop
removes the right number; the masks and position ids it prepares do not depend on either argument.
"""

from __future__ import annotations

import inspect
from typing import Any

UPDATE = "transformers.generation.candidate_generator:AssistedCandidateGenerator._update_past_and_masks"

# Read by doctor --sweep --differential: where upstream's answer is right its drafter still drafted from a cache
# holding rejected tokens, so the target verified other drafts in other chunks than it does with the drafter's
# cache right; the tokens are greedy's both ways, the logits differ by float rounding (7.2e-07: 5.15.1's GPT-Neo,
# assisted-4-tokens).
NOT_BITWISE = ("the drafter drafts from the accepted tokens only, so the target verifies other drafts, in other "
               "chunks, than upstream's drafter (whose cache kept rejected tokens) made it verify")


def install(patcher: Any) -> None:
    patcher.require(UPDATE, "input_ids", "remove_from_pkv", "num_added_tokens")
    patcher.wrap(UPDATE, _update_past_and_masks)


def _update_past_and_masks(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    cache = instance.assistant_kwargs.get("past_key_values", None)
    if cache is None:
        return wrapped(*args, **kwargs)
    call = inspect.signature(wrapped).bind(*args, **kwargs)
    call.apply_defaults()
    input_ids, remove, added = (call.arguments[k] for k in ("input_ids", "remove_from_pkv", "num_added_tokens"))
    extra = cache.get_seq_length() - (input_ids.shape[-1] - 1 - remove - added)
    # 5.16 does not crop when the cache is already short enough (every draft token accepted: the last one was
    # never fed to the drafter). Here the original's crop then gets 0, a no-op for full-attention layers; a
    # recording sliding layer only drops the states beyond the window that its next forward does not read.
    return wrapped(input_ids, remove_from_pkv=max(extra, 0), num_added_tokens=0)
