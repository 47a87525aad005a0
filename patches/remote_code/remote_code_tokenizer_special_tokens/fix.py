"""remote-code-tokenizer-special-tokens: 5.0 - 5.1 add [CLS]/[SEP] to every remote slow tokenizer's texts.

The defect. Before 5.0, ``PreTrainedTokenizer.build_inputs_with_special_tokens`` added nothing; a remote
tokenizer whose texts get no special tokens (Qwen-1's ``tokenization_qwen.py``, a direct subclass over its own
vocabulary) simply did not override it. 5.0.0 rewrote the slow base (``PythonBackend``) to build them from a
``special_tokens_pattern`` whose default is ``"cls_sep"``: such a tokenizer, which has no ``[CLS]`` / ``[SEP]``,
encodes ``[None, ..., None]`` and every call fails (``ValueError: type of None unknown``); one that has them gets
tokens its model never saw. The special-tokens mask and token type ids follow the same pattern. 5.2.0 made the
default ``None`` (no special tokens) again. Measured with a tiny remote tokenizer of that shape: 4.40.2, 4.57.6,
5.2.0 and 5.24.0 encode each text as its own tokens; 5.0.0 and 5.1.0 raise on every call.

Detection (``probe``): that tokenizer, loaded with ``trust_remote_code=True``, must encode each text as its own
tokens' ids and a batch as those rows padded on the left.

Correction. A remote class that subclasses the slow base directly (only remote classes between it and
``PythonBackend`` in its MRO, so no transformers tokenizer that chose a pattern) and does not pass
``special_tokens_pattern`` gets 5.2's default, ``None``: the 4.x methods' behaviour. A pattern the class passes,
or sets afterwards, is kept.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit.remote_code import is_remote

TARGET = "transformers.tokenization_python:PythonBackend.__init__"


def written_for_4x(cls: type, base: type) -> bool:
    """Whether every class above ``base`` in ``cls``'s MRO is remote code."""
    mro = cls.__mro__
    return base in mro and all(is_remote(c) for c in mro[: mro.index(base)])


def install(patcher: Any) -> None:
    from transformers.tokenization_python import PythonBackend

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if instance is not None and "special_tokens_pattern" not in kwargs and written_for_4x(type(instance),
                                                                                              PythonBackend):
            kwargs["special_tokens_pattern"] = None
        return wrapped(*args, **kwargs)

    patcher.wrap(TARGET, wrapper)
