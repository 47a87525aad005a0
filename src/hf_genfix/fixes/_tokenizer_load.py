"""What a wrapper around ``AutoTokenizer.from_pretrained`` can learn about the repo it loaded (shared by the
``pad-token`` and ``padding-side`` fixes).

The repo's files are read from the local cache only (``local_files_only=True``): ``AutoTokenizer`` has just
fetched them, so this never adds a network round trip, and a file that is not there simply means "unknown".
"""

from __future__ import annotations

from typing import Any, Mapping

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
    from transformers.models.auto import modeling_auto as auto

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
