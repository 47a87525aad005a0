"""padding-side: 5.x loads some decoder repos with padding side 'right' where 4.x gave 'left'.

The defect. On 4.x ``AutoTokenizer`` instantiates the class the repo names in ``tokenizer_config.json``
(``tokenizer_class``), and that class's ``padding_side`` is the default: ``LlamaTokenizerFast``,
``GemmaTokenizerFast``, ``CodeLlamaTokenizerFast``, ``CohereTokenizerFast`` say 'left'. 5.x sometimes loads the
generic ``TokenizersBackend`` instead, whose default is 'right', without the repo asking for it:

- a Llama-2-style repo (``model_type`` llama, ``LlamaTokenizer[Fast]``): on 5.0-5.2 "llama" has no entry in
  ``TOKENIZER_MAPPING_NAMES``, and ``AutoTokenizer`` reads the missing entry as "the repo names another class
  than its model type's" and falls back to ``TokenizersBackend`` (5.3 added the ``is not None`` guard);
- a Mistral-style repo (``model_type`` mistral with ``LlamaTokenizer``): the mapping says ``TokenizersBackend``
  (or ``MistralCommonBackend``, which is 'left', when mistral-common is installed), which differs from the
  named class, so every 5.x release but 5.6 takes the same fallback (5.6.0-5.6.2 trusted any specialized class
  a repo names; 5.7.0 went back to 5.5's rule: the range leaves 5.6 out);
- from 5.3 the model types in ``MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS`` (e.g. phi3, whose repos name
  ``LlamaTokenizer``) are forced to ``TokenizersBackend`` too.
A right-padded batch then reaches ``generate()`` (see ``right-padding``) in code that was correct on 4.x.

Detection and correction. After ``AutoTokenizer.from_pretrained`` returns, when the loaded tokenizer is not an
instance of the class the repo names, the padding side becomes that class's default. Never when the caller
passed ``padding_side=`` (or ``tokenizer_type=``, which chooses the class), and never when the repo's
``tokenizer_config.json`` sets ``padding_side``: an explicit choice is kept on every release. Tokenizers whose
class was honoured are untouched, so the patch changes nothing where 5.x agrees with 4.x.

Saving. ``save_pretrained`` of such a tokenizer writes the files upstream writes: the generic class, no padding
side, and, where a padded call left its padding in the fast backend (which ``tokenizer.json`` records and a
reload reads back as the side), upstream's direction, not the corrected one. The save runs on a copy for that;
the caller's tokenizer keeps its side. So a reload elsewhere gets what upstream gives, and the correction is never
written as if it were the repo's. In this process the patch remembers which directories it saw a corrected
tokenizer saved to (with the saved ``tokenizer_config.json``, so a directory overwritten since is not mistaken
for it), and a reload from one of them gets the side the saved tokenizer had.

Who set it. The side is the patch's until anybody sets ``padding_side`` (the tokenizer's ``__setattr__`` is
wrapped for that, as ``pad-token`` does for the pad token): from then on it is the user's, saved as upstream
saves it.

Training. The patch cannot tell a tokenizer loaded for training from one loaded for generation (it is the same
call), and it does touch both, because the evidence says that is safe: it only ever restores the side 4.x gave
the same repo, which training code written for 4.x already lived with, and for the model families concerned
(Llama, Mistral, Gemma: rotary positions) a left-padded training batch gives the per-row loss of the unpadded
rows, as the right-padded one does (``tests/padding/test_training.py`` measures both in float32). Trainers
that want right padding (e.g. TRL's SFT collators) set it themselves, and an explicit setting always wins.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from hf_genfix._patches.padding.shared.tokenizer_load import (
    SavedDirectories,
    repo_of,
    setting_drops_mark,
    tokenizer_config,
)

from hf_genfix.toolkit import recorder

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

FROM_PRETRAINED = "transformers.models.auto.tokenization_auto:AutoTokenizer.from_pretrained"
SAVE_PRETRAINED = "transformers.tokenization_utils_base:PreTrainedTokenizerBase.save_pretrained"
SETATTR = "transformers.tokenization_utils_base:PreTrainedTokenizerBase.__setattr__"

# Tokenizers whose side this patch chose, and the directories they were saved to in this process:
# realpath -> (padding side when saved, the tokenizer_config.json written).
# A tokenizer whose side this patch chose carries this attribute, holding the side upstream gave it: an attribute,
# not a set of objects, because copies and pickles must carry it too (pad-token saves a deepcopy of the
# tokenizer, without the pad token it assigned).
_MARK = "_hf_genfix_padding_side_chosen"
_saved = SavedDirectories()

log = logging.getLogger("hf_genfix")


def install(patcher: Any) -> None:
    patcher.require("transformers.models.auto.tokenization_auto:get_tokenizer_config")
    patcher.require("transformers.models.auto.tokenization_auto:tokenizer_class_from_name")
    patcher.wrap(FROM_PRETRAINED, _from_pretrained)
    patcher.wrap(SAVE_PRETRAINED, _save_pretrained)
    patcher.wrap(SETATTR, setting_drops_mark(frozenset({"padding_side"}), _MARK))


def _from_pretrained(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    tokenizer = wrapped(*args, **kwargs)
    if record.on:
        record.seen()
    if "padding_side" in kwargs or kwargs.get("tokenizer_type") is not None:
        return tokenizer
    repo = repo_of(args, kwargs)
    try:
        named = _substituted_class(tokenizer, repo, kwargs)
        saved = _saved_side(tokenizer, repo, kwargs) if named is None else None
    except Exception:  # noqa: BLE001 - a failed guess must never fail the user's load
        log.debug("hf_genfix padding-side: could not decide for %r", repo, exc_info=True)
        return tokenizer
    side = getattr(named, "padding_side", None) if named is not None else saved
    upstream_side = tokenizer.padding_side
    if side in ("left", "right") and side != tokenizer.padding_side:
        log.info(
            "hf_genfix padding-side: %s loaded as %s (padding side %r) although %s: using %r",
            repo, type(tokenizer).__name__, tokenizer.padding_side,
            f"it names {named.__name__}, whose default (the 4.x side) is {side!r}" if named is not None
            else f"a tokenizer with padding side {side!r} was saved there by this process",
            side,
        )
        tokenizer.padding_side = side
        if record.on:
            record.changed("%s: padding side %r (the 4.x side of %s)", repo, side,
                            getattr(named, "__name__", "the tokenizer saved there"))
    if side in ("left", "right"):
        vars(tokenizer)[_MARK] = upstream_side
    return tokenizer


def _save_pretrained(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    upstream_side = vars(instance).get(_MARK) if instance is not None else None
    padding = getattr(getattr(instance, "_tokenizer", None), "padding", None)
    if (isinstance(padding, dict) and upstream_side in ("left", "right")
            and str(padding.get("direction", "")).lower() not in ("", upstream_side)):
        # tokenizer.json would record the corrected side as the repo's: save a copy padded as upstream's is.
        try:
            clean = copy.deepcopy(instance)
            clean._tokenizer.enable_padding(**{**padding, "direction": upstream_side})
        except Exception:  # noqa: BLE001 - a tokenizer that cannot be copied is saved as it is
            log.debug("hf_genfix padding-side: could not copy the tokenizer to save it", exc_info=True)
        else:
            return clean.save_pretrained(*args, **kwargs)
    files = wrapped(*args, **kwargs)
    if upstream_side is not None:
        try:
            _saved.remember(args, kwargs, instance.padding_side)
        except Exception:  # noqa: BLE001 - remembering must never fail the user's save
            log.debug("hf_genfix padding-side: could not remember a save", exc_info=True)
    return files


def _saved_side(tokenizer: Any, repo: Any, kwargs: dict) -> str | None:
    """The side of the corrected tokenizer this process saved to ``repo``, if the repo still holds what was
    saved. A side the reload reads from those files (the padding a padded call left in ``tokenizer.json``) is
    upstream's, written by this patch's save, not a choice of the repo's."""
    return _saved.recall(repo, kwargs)


def _substituted_class(tokenizer: Any, repo: Any, kwargs: dict) -> type | None:
    """The class the repo names when the loaded tokenizer is not one, and neither the repo's config nor the
    caller chose a padding side; else None."""
    if repo is None or "padding_side" in (getattr(tokenizer, "init_kwargs", None) or {}):
        return None
    config = tokenizer_config(repo, kwargs)
    if "padding_side" in config:
        return None
    named = _named_class(config.get("tokenizer_class"))
    if named is None or isinstance(tokenizer, named):
        return None
    return named


def _named_class(name: Any) -> type | None:
    """The class the repo names, as 4.x would have loaded it (the Fast variant first)."""
    if not isinstance(name, str) or not name:
        return None
    from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

    base = name[: -len("Fast")] if name.endswith("Fast") else name
    for candidate in (base + "Fast", base):
        try:
            cls = tokenizer_class_from_name(candidate)
            # A placeholder for a class whose backend (e.g. sentencepiece) is missing raises on attribute access.
            if isinstance(cls, type) and getattr(cls, "padding_side", None) in ("left", "right"):
                return cls
        except Exception:  # noqa: BLE001
            continue
    return None
