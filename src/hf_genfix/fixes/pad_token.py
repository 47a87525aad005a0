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

Training. The same ``from_pretrained`` call loads a tokenizer for training and for generation, so the patch
cannot leave training tokenizers alone; the evidence says that pad == eos is harmful for training in one
place: ``DataCollatorForLanguageModeling(mlm=False)`` builds labels by masking every token equal to the pad id,
so each real eos gets label -100 and the fine-tuned model never learns to stop (huggingface/transformers#23530,
open; measured on every release in ``tests/padding/test_training.py``). A user who sets pad = eos by hand, as
upstream's error message suggests, gets that; hf_genfix, having chosen the pad token itself, takes the
consequence: for tokenizers whose pad it assigned (and while it is still that eos), the collator's labels are
masked by the padding positions instead (``attention_mask``, or the examples' lengths), which is exactly what a
distinct pad token would have given. Other training code that masks labels by ``pad_token_id`` is outside
transformers and keeps its behaviour; ``docs/padding.md`` says to pick a dedicated pad token for training.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Mapping

from ._tokenizer_load import is_decoder_only, model_config, repo_of
from .. import _record

FROM_PRETRAINED = "transformers.models.auto.tokenization_auto:AutoTokenizer.from_pretrained"
COLLATOR_CALLS = (
    "transformers.data.data_collator:DataCollatorForLanguageModeling.torch_call",
    "transformers.data.data_collator:DataCollatorForLanguageModeling.numpy_call",
)

log = logging.getLogger("hf_genfix")

# tokenizer -> the eos token hf_genfix made its pad token
_assigned: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()
_told: set[str] = set()
_lock = threading.Lock()


def install(patcher: Any) -> None:
    patcher.require("transformers:PretrainedConfig.get_config_dict")
    patcher.wrap(FROM_PRETRAINED, _from_pretrained)
    for target in COLLATOR_CALLS:
        patcher.wrap(target, _collate)


def _from_pretrained(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    tokenizer = wrapped(*args, **kwargs)
    if _record.on:
        _record.seen("pad-token")
    if "pad_token" in kwargs or getattr(tokenizer, "pad_token", "") is not None:
        return tokenizer
    repo = repo_of(args, kwargs)
    try:
        decoder_only = is_decoder_only(model_config(repo, kwargs))
    except Exception:  # noqa: BLE001 - a failed guess must never fail the user's load
        log.debug("hf_genfix pad-token: could not read the model config of %r", repo, exc_info=True)
        return tokenizer
    if decoder_only:
        _give_pad_token(tokenizer, repo)
        if _record.on and pad_assigned_by_hf_genfix(tokenizer):
            _record.changed("pad-token", "%s: pad token %r (its eos)", repo, tokenizer.pad_token)
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
    size = len(tokenizer)
    tokenizer.pad_token = eos
    if len(tokenizer) != size:  # pragma: no cover - eos is in the vocabulary by construction
        raise RuntimeError(f"setting pad_token = eos_token changed the vocabulary of {repo!r}")
    _assigned[tokenizer] = str(eos)
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


def pad_assigned_by_hf_genfix(tokenizer: Any) -> bool:
    """True while ``tokenizer``'s pad token is the eos token this patch gave it."""
    try:
        eos = _assigned.get(tokenizer)
    except TypeError:  # unhashable stand-ins for tokenizers
        return False
    return eos is not None and str(tokenizer.pad_token) == eos


def _collate(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    batch = wrapped(*args, **kwargs)
    tokenizer = getattr(instance, "tokenizer", None)
    if getattr(instance, "mlm", True) or tokenizer is None or not pad_assigned_by_hf_genfix(tokenizer):
        return batch
    labels, ids = batch.get("labels"), batch.get("input_ids")
    if labels is None or ids is None or labels.shape != ids.shape:
        return batch
    examples = args[0] if args else kwargs.get("examples")
    attended = _attended(batch, examples, tokenizer.padding_side)
    if attended is None:
        return batch
    hidden = (labels == -100) & attended & (ids == tokenizer.pad_token_id)
    if hidden.any():
        labels = labels.clone() if hasattr(labels, "clone") else labels.copy()
        labels[hidden] = ids[hidden]
        batch["labels"] = labels
    return batch


def _attended(batch: Mapping[str, Any], examples: Any, side: str) -> Any:
    """Where the batch holds real tokens (not padding), shaped like ``input_ids``; None when unknown."""
    ids = batch["input_ids"]
    mask = batch.get("attention_mask")
    if mask is not None and mask.shape == ids.shape:
        return mask != 0
    if not examples:
        return None
    lengths = []
    for example in examples:
        row = example.get("input_ids") if isinstance(example, Mapping) else example
        if row is None:
            return None
        lengths.append(len(row))
    import numpy as np

    width = ids.shape[1]
    columns = np.arange(width)[None, :]
    counts = np.asarray(lengths)[:, None]
    attended = columns >= width - counts if side == "left" else columns < counts
    if isinstance(ids, np.ndarray):
        return attended
    import torch

    return torch.from_numpy(attended).to(ids.device)


def probe() -> dict[str, Any]:
    """A Llama-3-style local repo (decoder-only, no pad token) can pad a batch, with eos as pad."""
    from hf_genfix.oracles.outcome import DefectObserved
    from hf_genfix.oracles.padding import check_can_pad
    from hf_genfix.oracles.tokenizers import load_tokenizer

    tokenizer = load_tokenizer("llama3")
    figures = check_can_pad(tokenizer, "llama3-style repo")
    if tokenizer.pad_token_id != tokenizer.eos_token_id:
        raise DefectObserved(f"llama3-style repo: pad id {tokenizer.pad_token_id} is not eos "
                             f"{tokenizer.eos_token_id}")
    return figures
