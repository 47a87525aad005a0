"""Whether hf_genfix set a tokenizer's pad token (``pad-token``), which ``pad-token-collator`` reads: the mark
``pad-token`` leaves on the tokenizers it gives a pad token.
"""

from __future__ import annotations

from typing import Any

# In a tokenizer's __dict__: the string object this patch stored as its pad token (see "Who set it").
MARK = "_hf_genfix_pad_token"


def pad_assigned_by_hf_genfix(tokenizer: Any) -> bool:
    """True while ``tokenizer``'s pad token is the eos token this patch gave it (nobody has set it since)."""
    try:
        chosen = vars(tokenizer).get(MARK)
    except TypeError:  # objects without a __dict__ are no tokenizers of ours
        return False
    if chosen is None:
        return False
    stored = vars(tokenizer).get("_special_tokens_map")
    if isinstance(stored, dict) and "pad_token" in stored:  # where the release keeps one, every setter stores there
        return stored["pad_token"] is chosen
    if "_pad_token" in vars(tokenizer):  # up to 4.5x the pad_token setter stores the value as given there
        return vars(tokenizer)["_pad_token"] is chosen
    return str(getattr(tokenizer, "pad_token", None)) == chosen


def adopt_eos_as_pad(tokenizer: Any) -> None:
    """Make ``tokenizer``'s eos token its pad token, recorded as hf_genfix's choice (not the user's)."""
    eos = tokenizer.eos_token
    # An equal string that is a new object (not eos's own, which a user's `pad_token = eos_token` stores), so
    # that the mark identifies this assignment even where the __setattr__ wrapper does not see the next one.
    chosen = str(eos).encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
    size = len(tokenizer)
    tokenizer.pad_token = chosen
    if len(tokenizer) != size:  # pragma: no cover - eos is in the vocabulary by construction
        raise RuntimeError(f"setting pad_token = eos_token changed the vocabulary of {tokenizer!r}")
    vars(tokenizer)[MARK] = chosen
