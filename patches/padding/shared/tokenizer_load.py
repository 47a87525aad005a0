"""What a wrapper around ``AutoTokenizer.from_pretrained`` can learn about the repo it loaded (shared by the
``pad-token`` and ``padding-side`` fixes).

It also keeps, for the process, which directories a tokenizer these fixes changed was saved to
(``SavedDirectories``): they write upstream's files, so what they chose is not in the files, and a reload in the
same process gets it back from here.

The repo's files are read from the local cache only (``local_files_only=True``): ``AutoTokenizer`` has just
fetched them, so this never adds a network round trip, and a file that is not there simply means "unknown".
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import Any, Callable, Mapping

from hf_genfix.toolkit import reset_in_child

# from_pretrained keywords that say where the repo's files are; everything else is for the tokenizer.
_LOCATION_KEYS = ("cache_dir", "revision", "subfolder", "token", "use_auth_token", "_commit_hash")


def repo_of(args: tuple, kwargs: Mapping[str, Any]) -> Any:
    return args[0] if args else kwargs.get("pretrained_model_name_or_path")


def _location(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    found = {k: kwargs[k] for k in _LOCATION_KEYS if kwargs.get(k) is not None}
    found["local_files_only"] = True
    return found


def tokenizer_config(repo: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The repo's ``tokenizer_config.json`` as a dict ({} when there is none)."""
    from transformers.models.auto.tokenization_auto import get_tokenizer_config

    try:
        return dict(get_tokenizer_config(repo, **_location(kwargs)) or {})
    except (OSError, ValueError):
        return {}


def model_config(repo: Any, kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The model config the tokenizer belongs to: the caller's ``config=``, else the repo's ``config.json``
    (read as data, so no remote code runs); None when there is none."""
    given = kwargs.get("config")
    if given is not None:
        return given.to_dict() if hasattr(given, "to_dict") else dict(given)
    from transformers import PretrainedConfig

    try:
        config, _ = PretrainedConfig.get_config_dict(repo, **_location(kwargs))
    except (OSError, ValueError, TypeError):
        return None
    return config


def is_decoder_only(config: Mapping[str, Any] | None) -> bool:
    """Whether the config describes a decoder-only (causal) language model.

    ``architectures`` decide when the repo lists them (``*ForCausalLM``, ``*LMHeadModel`` or a class of the
    causal-LM auto mapping); otherwise the ``model_type`` must have a causal-LM class and no masked-LM or
    seq2seq one (so BERT-likes, which also have a ``*LMHeadModel``, are not taken for decoders).
    """
    if not config or config.get("is_encoder_decoder"):
        return False
    # The module itself, not the attribute of transformers.models.auto: without torch, 5.x's lazy package hands
    # out a placeholder for it whose every attribute raises "Please install PyTorch", while the module only holds
    # the name tables (plain data, no torch needed; a tokenizer needs no torch either).
    auto = importlib.import_module("transformers.models.auto.modeling_auto")

    causal = getattr(auto, "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", {})
    architectures = config.get("architectures") or []
    if architectures:
        causal_classes = set(causal.values())
        return any(
            a in causal_classes or a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures
        )
    model_type = config.get("model_type")
    masked = getattr(auto, "MODEL_FOR_MASKED_LM_MAPPING_NAMES", {})
    seq2seq = getattr(auto, "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", {})
    return model_type in causal and model_type not in masked and model_type not in seq2seq


class SavedDirectories:
    """Directories this process saved a tokenizer to, each with what the fix wants back on reload.

    A directory counts only while it still holds the ``tokenizer_config.json`` that was written there (compared
    byte for byte), so a directory overwritten since, by anybody, is not mistaken for it.
    """

    def __init__(self) -> None:
        self._saved: dict[str, tuple[Any, bytes]] = {}
        self._lock = reset_in_child(threading.Lock())

    def remember(self, args: tuple, kwargs: Mapping[str, Any], value: Any) -> None:
        """Record the directory of a ``save_pretrained(*args, **kwargs)`` call that has just returned."""
        directory = os.fspath(args[0] if args else kwargs["save_directory"])
        config = _config_bytes(directory, kwargs.get("filename_prefix"))
        if config is not None:
            with self._lock:
                self._saved[os.path.realpath(directory)] = (value, config)

    def recall(self, repo: Any, kwargs: Mapping[str, Any]) -> Any:
        """What was remembered for the directory ``from_pretrained(repo, **kwargs)`` reads, if it still holds
        what was saved; else None."""
        if not isinstance(repo, (str, os.PathLike)):
            return None
        directory = os.path.join(os.fspath(repo), kwargs.get("subfolder") or "")
        with self._lock:
            saved = self._saved.get(os.path.realpath(directory))
        if saved is None or _config_bytes(directory) != saved[1]:
            return None
        return saved[0]


def _config_bytes(directory: str, prefix: Any = None) -> bytes | None:
    name = (prefix + "-" if prefix else "") + "tokenizer_config.json"
    try:
        with open(os.path.join(directory, name), "rb") as f:
            return f.read()
    except OSError:
        return None


def setting_drops_mark(keys: frozenset, mark: str) -> Callable[..., Any]:
    """A wrapper for the tokenizers' ``__setattr__``: whoever sets one of ``keys`` (the user, or upstream code on
    their behalf) owns the value from then on, so the tokenizer loses ``mark`` (the fix's record that it chose it)."""

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if instance is None:  # PreTrainedTokenizerBase.__setattr__(tokenizer, key, value)
            instance, args = args[0], args[1:]
            result = wrapped(instance, *args, **kwargs)
        else:
            result = wrapped(*args, **kwargs)
        if args and args[0] in keys:
            vars(instance).pop(mark, None)
        return result

    return wrapper
