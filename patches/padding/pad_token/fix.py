"""pad-token: tokenizers of decoder-only models often have no pad token, so a batch cannot be padded.

The defect. Llama-3-style repos (``PreTrainedTokenizerFast``), GPT-2, Mistral, Llama-2 and many others ship no
pad token: ``tokenizer(prompts, padding=True)`` raises "Asking to pad but the tokenizer does not have a padding
token" on every release (4.40-5.24 measured), and the usual workaround is copied by hand into every program.

Correction. After ``AutoTokenizer.from_pretrained`` returns a tokenizer without a pad token, and the repo's model
config (the caller's ``config=``, else the repo's ``config.json``) describes a decoder-only model, the pad token
becomes the eos token: no token is added, so the vocabulary and the model's embeddings stay as they are, and
``generate()`` pads finished rows with the same id (it falls back to eos when ``pad_token_id`` is unset). The
first assignment in a process is logged at WARNING (later ones at DEBUG). Not touched: a tokenizer with a pad
token, a caller who passed ``pad_token=`` (even None), a repo that is not decoder-only or whose config cannot be
read from the local cache. With no eos token either, nothing is assigned and a WARNING says so once per repo:
padding keeps raising upstream's error until a pad token is chosen (an existing token, or a new one together with
``model.resize_token_embeddings``).

Who set it. hf_genfix cannot tell its pad from the user's by value (the fine-tuning idiom
``tokenizer.pad_token = tokenizer.eos_token`` gives the very same value), so it records who set it: the tokenizer
carries a mark, in its own ``__dict__`` (so ``copy.copy``, ``copy.deepcopy`` and pickle carry it too), holding
the string object this patch stored as pad token. Any assignment after that, by any public path (the
``pad_token`` / ``pad_token_id`` attributes, ``add_special_tokens({"pad_token": ...})``, which sets the
attribute, setting ``<pad>`` and then eos back), goes through the tokenizer's ``__setattr__``, which this patch
wraps to drop the mark; a write that bypasses it (inside ``hf_genfix.disabled()``, into the private special-token
map) stores another object than the one the mark holds, which says the same. From then on the pad token is the
user's, and everything upstream does with it (saving included) is upstream's.

Saving. While the pad token is hf_genfix's choice, ``tokenizer.save_pretrained(d)`` writes the files it writes
without hf_genfix (no ``pad_token`` in ``tokenizer_config.json`` / ``special_tokens_map.json``, no padding in
``tokenizer.json``), so a saved repo never carries the choice as if it were the user's. The save runs on a copy
of the tokenizer without the pad token (the caller's tokenizer is never modified, not even for the duration of the
save). A reload through ``AutoTokenizer`` makes the choice again: from the ``config.json`` that
``model.save_pretrained`` writes beside it, or, for a tokenizer saved alone, because this process remembers the
directories it saved such a tokenizer to (while the directory still holds the ``tokenizer_config.json`` written
there), so that the round trip pads as the tokenizer did before it. Another process reloading a tokenizer saved
alone gets what upstream gives, no pad token.

Without torch. A tokenizer needs no torch, and neither does this patch: the causal-LM names are read from
``transformers.models.auto.modeling_auto`` itself (5.x's lazy package hands out a placeholder for it without
torch). Where the decoder-only guess fails anyway, a WARNING says so once and the tokenizer is left as loaded.

Training: the collator half (``DataCollatorForLanguageModeling``, transformers#23530) is the separate patch
``pad-token-collator``, installed when ``transformers.data.data_collator`` is imported: an inference program
never imports that module, and this patch must not wait for it.
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any

from hf_genfix._patches.padding.shared.pad_mark import MARK, adopt_eos_as_pad, pad_assigned_by_hf_genfix
from hf_genfix._patches.padding.shared.tokenizer_load import (
    SavedDirectories,
    is_decoder_only,
    model_config,
    repo_of,
    setting_drops_mark,
)

from hf_genfix.toolkit import recorder, reset_in_child

record = recorder(__name__)  # this patch's reports to hf_genfix.recording()

FROM_PRETRAINED = "transformers.models.auto.tokenization_auto:AutoTokenizer.from_pretrained"
SAVE = "transformers.tokenization_utils_base:PreTrainedTokenizerBase.save_pretrained"
# Every public way of setting a special token ends in this __setattr__ (SpecialTokensMixin's on 4.x, the base
# class's own on 5.x; where a release has pad_token properties instead, object.__setattr__ reaches them alike).
SETATTR = "transformers.tokenization_utils_base:PreTrainedTokenizerBase.__setattr__"

log = logging.getLogger("hf_genfix")
_PAD_KEYS = frozenset({"pad_token", "pad_token_id"})
# Directories a tokenizer whose pad this patch chose was saved to (its files have no pad token).
_saved = SavedDirectories()
_told: set[str] = set()
_lock = reset_in_child(threading.Lock())


def install(patcher: Any) -> None:
    patcher.require("transformers:PretrainedConfig.get_config_dict")
    patcher.wrap(FROM_PRETRAINED, _from_pretrained)
    patcher.wrap(SETATTR, setting_drops_mark(_PAD_KEYS, MARK))
    # 5.x tokenizer classes override save_pretrained (and call the base's): each level is wrapped; the copy
    # saved by the outer one carries no pad token of ours, so the inner ones pass it through.
    patcher.wrap_subclasses(SAVE, _save_pretrained)


def _from_pretrained(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    tokenizer = wrapped(*args, **kwargs)
    if record.on:
        record.seen()
    if "pad_token" in kwargs or getattr(tokenizer, "pad_token", "") is not None:
        return tokenizer
    repo = repo_of(args, kwargs)
    try:
        decoder_only = is_decoder_only(model_config(repo, kwargs)) or bool(_saved.recall(repo, kwargs))
    except Exception as exc:  # noqa: BLE001 - a failed guess must never fail the user's load
        # Said once at WARNING: the patch is applied yet does nothing for this load, which status() cannot show.
        _once("no-guess", logging.WARNING, "hf_genfix pad-token: could not tell whether %s is a decoder-only model "
              "(%s: %s); its tokenizer is left as transformers loads it", repo, type(exc).__name__,
              str(exc).strip().splitlines()[0] if str(exc).strip() else "")
        log.debug("hf_genfix pad-token: reading the model config of %r failed", repo, exc_info=True)
        return tokenizer
    if decoder_only:
        _give_pad_token(tokenizer, repo)
        if record.on and pad_assigned_by_hf_genfix(tokenizer):
            record.changed("%s: pad token %r (its eos)", repo, tokenizer.pad_token)
    return tokenizer


def _give_pad_token(tokenizer: Any, repo: Any) -> None:
    eos = tokenizer.eos_token
    if eos is None:
        _once(
            f"no-eos:{repo}", logging.WARNING,
            "hf_genfix pad-token: %s (a decoder-only model) has neither a pad nor an eos token; left as is. "
            "Padding a batch will raise until you choose a pad token: an existing token "
            "(tokenizer.pad_token = ...), or a new one followed by model.resize_token_embeddings(len(tokenizer)).",
            repo,
        )
        return
    adopt_eos_as_pad(tokenizer)
    _once(
        "assigned", logging.WARNING,
        "hf_genfix pad-token: %s has no pad token; using its eos token %r (id %s) as pad token, as generate() "
        "does. For fine-tuning, prefer a dedicated pad token (see hf_genfix docs/padding.md). "
        "Set HF_GENFIX_PAD_TOKEN=off to keep tokenizers unchanged.",
        repo, str(eos), tokenizer.pad_token_id,
    )


def _once(key: str, level: int, message: str, *args: Any) -> None:
    with _lock:
        first = key not in _told
        _told.add(key)
    log.log(level if first else logging.DEBUG, message, *args)


def forget(tokenizer: Any) -> None:
    """Treat ``tokenizer``'s pad token as the user's from now on (as an assignment by the user does)."""
    vars(tokenizer).pop(MARK, None)


def _save_pretrained(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    if instance is None or not pad_assigned_by_hf_genfix(instance):
        return wrapped(*args, **kwargs)
    try:
        clean = copy.deepcopy(instance)
        forget(clean)
        backend = getattr(clean, "_tokenizer", None)
        padding = getattr(backend, "padding", None)
        clean.pad_token = None
        # A padded call leaves its padding (pad id = eos) in the fast backend, which tokenizer.json records.
        if isinstance(padding, dict) and padding.get("pad_token") == vars(instance)[MARK]:
            backend.no_padding()
    except Exception:  # noqa: BLE001 - a tokenizer that cannot be copied is saved as upstream saves it
        _once("save-copy", logging.WARNING,
              "hf_genfix pad-token: could not copy the tokenizer to save it without the pad token hf_genfix "
              "chose; it is saved with pad_token %r", str(instance.pad_token))
        return wrapped(*args, **kwargs)
    files = clean.save_pretrained(*args, **kwargs)
    try:
        _saved.remember(args, kwargs, True)
    except Exception:  # noqa: BLE001 - remembering must never fail the user's save
        log.debug("hf_genfix pad-token: could not remember a save", exc_info=True)
    return files
