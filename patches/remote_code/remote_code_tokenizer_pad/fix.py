"""remote-code-tokenizer-pad: a remote tokenizer with a 4.44-era ``_pad`` cannot encode anything on 4.45+.

The defect. 4.45.0 added a ``padding_side`` argument to ``PreTrainedTokenizerBase.pad`` and passes it on:
``self._pad(..., padding_side=padding_side)``. Remote-code tokenizers that override ``_pad`` with the older
signature (ChatGLM2/3's, which also builds the position ids there, and those copied from it) get ``TypeError:
ChatGLMTokenizer._pad() got an unexpected keyword argument 'padding_side'``; encoding even one text pads (to
add the attention mask), so every call of the tokenizer fails. Measured with a tiny remote tokenizer of that
shape: 4.44.2 encodes; 4.45.0, 4.57.6, 5.2.0 and 5.24.0 raise on every call.

Detection (``probe``): the tiny ChatGLM3-style remote repo's tokenizer must encode a batch, left-padded, and
the model must generate from that batch (its tokenizer-made position ids included) like the no-cache
reference of each unpadded row.

Correction. A remote tokenizer class whose own ``_pad`` takes neither ``padding_side`` nor ``**kwargs`` has it
wrapped: the argument is taken out of the call and, where it asks for another side than the tokenizer's
``padding_side`` (which such a ``_pad`` reads), the old ``_pad`` runs on a shallow view of the tokenizer that has
that side, as the 4.45 base ``_pad`` reads its argument (not by setting the attribute for the call: the user's
tokenizer, which other threads may be using, never changes side). ChatGLM's ``_pad`` asserts left padding: asked
for the right side it fails loudly, as its authors meant. Every other tokenizer is untouched.
"""

from __future__ import annotations

import inspect
from typing import Any

from hf_genfix.toolkit import recorder
from hf_genfix.toolkit.remote_code import is_remote

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

TARGET = "transformers.tokenization_utils_base:PreTrainedTokenizerBase._pad"
HOOK = "transformers.tokenization_utils_base:PreTrainedTokenizerBase"


def old_pad(cls: type) -> bool:
    """A remote class whose own ``_pad`` cannot take ``padding_side``."""
    own = vars(cls).get("_pad")
    if own is None or not is_remote(cls):
        return False
    try:
        params = inspect.signature(own).parameters.values()
    except (TypeError, ValueError):
        return False
    return not any(p.name == "padding_side" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def install(patcher: Any) -> None:
    patcher.require(TARGET, "padding_side")

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        given = "padding_side" in kwargs
        side = kwargs.pop("padding_side", None)
        if given and record.on:  # upstream's call raises TypeError (an unexpected keyword): this one is changed
            record.changed("%s._pad without padding_side=%r",
                            type(instance).__name__, side)
        if instance is None or side is None or side == instance.padding_side:
            return wrapped(*args, **kwargs)
        view = object.__new__(type(instance))  # the old _pad reads the attribute: another side for this call only
        view.__dict__.update(vars(instance))
        view.padding_side = side
        return getattr(wrapped, "__func__", wrapped)(view, *args, **kwargs)

    patcher.wrap_subclasses(TARGET, wrapper, where=old_pad, hook=HOOK)
