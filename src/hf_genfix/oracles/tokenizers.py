"""Local tokenizers laid out like hub repos, built with the ``tokenizers`` library (no downloads).

``tokenizer_repo(layout)`` trains a tiny BPE on a few lines of text and writes a directory that
``AutoTokenizer.from_pretrained(directory)`` loads offline: ``tokenizer.json``, ``tokenizer_config.json``,
``special_tokens_map.json`` and a ``config.json`` whose special ids match the tokenizer, so a tiny model built with
``tiny_model(layout.model_type, **special_ids(layout))`` fits it. The layouts copy what matters for padding in the
real repos:

- ``llama3``: ``PreTrainedTokenizerFast``, byte-level BPE, no pad token, no ``padding_side``;
- ``llama2``: ``LlamaTokenizerFast`` (Metaspace BPE), no pad token, no ``padding_side``;
- ``mistral``: the Llama-2 tokenizer under ``model_type`` mistral;
- ``gpt2``: ``GPT2Tokenizer``, ``<|endoftext|>`` as bos/eos/unk, no pad token;
- ``qwen2``: ``Qwen2Tokenizer``, pad ``<|endoftext|>``, eos ``<|im_end|>``, no bos;
- ``gemma``: ``GemmaTokenizer``, ``<pad>`` and ``padding_side`` left in its config.

The Llama-2 / Mistral / Gemma layouts name the Fast classes: sentencepiece is not a dependency, so the slow
(sentencepiece) classes cannot load these repos on 4.x (there is no ``tokenizer.model``); on 5.x the names are
aliases of one class anyway.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .._fork import reset_in_child

TRAINING_TEXT = (
    "the quick brown fox jumps over the lazy dog",
    "a right padded batch gives wrong tokens when the model reads pad as prompt",
    "left padding keeps the last prompt token of every row in the same column",
    "hello world, how are you today? i am fine, thank you",
    "write a short poem about the sea and the sky",
    "translate: good morning. summarise: the weather is nice for a walk",
)

# The tiny models have 128 embeddings: every id a tokenizer produces must stay below this.
VOCAB_SIZE = 128


@dataclass(frozen=True)
class Layout:
    name: str
    model_type: str
    tokenizer_class: str
    style: str  # "byte" (byte-level BPE, GPT-2 / Llama-3 / Qwen2) or "metaspace" (sentencepiece-like BPE)
    specials: tuple[str, ...]  # in id order, from 0
    bos: str | None
    eos: str | None
    unk: str | None = None
    pad: str | None = None
    add_bos: bool = False
    padding_side: str | None = None  # written to tokenizer_config.json only when set
    extra_config: Mapping[str, Any] = field(default_factory=dict)
    architecture: str = ""

    def token_id(self, token: str | None) -> int | None:
        return None if token is None else self.specials.index(token)


LAYOUTS: dict[str, Layout] = {
    layout.name: layout
    for layout in (
        Layout("llama3", "llama", "PreTrainedTokenizerFast", "byte",
               ("<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"),
               bos="<|begin_of_text|>", eos="<|end_of_text|>", add_bos=True, architecture="LlamaForCausalLM",
               extra_config={"model_input_names": ["input_ids", "attention_mask"]}),
        Layout("llama2", "llama", "LlamaTokenizerFast", "metaspace", ("<unk>", "<s>", "</s>"),
               bos="<s>", eos="</s>", unk="<unk>", add_bos=True, architecture="LlamaForCausalLM",
               extra_config={"legacy": False, "add_eos_token": False}),
        Layout("mistral", "mistral", "LlamaTokenizerFast", "metaspace", ("<unk>", "<s>", "</s>"),
               bos="<s>", eos="</s>", unk="<unk>", add_bos=True, architecture="MistralForCausalLM",
               extra_config={"legacy": False, "add_eos_token": False}),
        Layout("gpt2", "gpt2", "GPT2Tokenizer", "byte", ("<|endoftext|>",),
               bos="<|endoftext|>", eos="<|endoftext|>", unk="<|endoftext|>", architecture="GPT2LMHeadModel"),
        Layout("qwen2", "qwen2", "Qwen2Tokenizer", "byte", ("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
               bos=None, eos="<|im_end|>", pad="<|endoftext|>", architecture="Qwen2ForCausalLM"),
        Layout("gemma", "gemma", "GemmaTokenizerFast", "metaspace", ("<pad>", "<eos>", "<bos>", "<unk>"),
               bos="<bos>", eos="<eos>", unk="<unk>", pad="<pad>", add_bos=True, padding_side="left",
               architecture="GemmaForCausalLM"),
    )
}


def layout_of(name: str) -> Layout:
    try:
        return LAYOUTS[name]
    except KeyError:
        raise KeyError(f"unknown tokenizer layout {name!r}; known: {sorted(LAYOUTS)}") from None


def special_ids(name: str) -> dict[str, int | None]:
    """``bos_token_id`` / ``eos_token_id`` / ``pad_token_id`` of a layout, as a model config should carry them.

    The config's ``pad_token_id`` follows the repo: None where the tokenizer has no pad token.
    """
    layout = layout_of(name)
    return {
        "bos_token_id": layout.token_id(layout.bos),
        "eos_token_id": layout.token_id(layout.eos),
        "pad_token_id": layout.token_id(layout.pad),
    }


def build_backend(name: str) -> Any:
    """The ``tokenizers.Tokenizer`` of a layout, trained on ``TRAINING_TEXT`` (deterministic, < 128 ids)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    layout = layout_of(name)
    if layout.style == "byte":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        text = TRAINING_TEXT
    else:
        tok = Tokenizer(models.BPE(unk_token=layout.unk, fuse_unk=True))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.Fuse(), decoders.Strip(content=" ", left=1)]
        )
        text = tuple(line.replace(" ", "▁") for line in TRAINING_TEXT)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=list(layout.specials), show_progress=False, initial_alphabet=[]
    )
    tok.train_from_iterator(text, trainer=trainer)
    if layout.add_bos:
        bos = layout.bos
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, layout.token_id(bos))]
        )
    elif layout.style == "byte":
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    assert tok.get_vocab_size() <= VOCAB_SIZE, tok.get_vocab_size()
    return tok


def write_repo(
    name: str,
    directory: Path | str,
    padding_side: str | None = None,
    model_config: Mapping[str, Any] | None = None,
    tokenizer_config: Mapping[str, Any] | None = None,
) -> Path:
    """Write the files of a layout's repo into ``directory`` (created if missing); returns the path.

    ``padding_side`` (when given) is written to ``tokenizer_config.json``, as a repo that asks for one does.
    ``model_config`` / ``tokenizer_config`` entries are merged into ``config.json`` / ``tokenizer_config.json``
    (a value of None removes the key); ``model_config={"config.json": None}`` writes no ``config.json``.
    """
    layout = layout_of(name)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    build_backend(name).save(str(directory / "tokenizer.json"))
    specials = {
        key: value
        for key, value in (("bos_token", layout.bos), ("eos_token", layout.eos), ("unk_token", layout.unk),
                           ("pad_token", layout.pad))
        if value is not None
    }
    added = {
        str(layout.token_id(t)): {"content": t, "lstrip": False, "rstrip": False, "normalized": False,
                                  "single_word": False, "special": True}
        for t in layout.specials
    }
    tok_config: dict[str, Any] = {
        "tokenizer_class": layout.tokenizer_class,
        "added_tokens_decoder": added,
        "model_max_length": 256,
        "clean_up_tokenization_spaces": False,
        **specials,
        **dict(layout.extra_config),
    }
    if layout.add_bos and layout.tokenizer_class != "PreTrainedTokenizerFast":
        tok_config["add_bos_token"] = True
    if layout.pad is None:
        tok_config["pad_token"] = None
    side = padding_side if padding_side is not None else layout.padding_side
    if side is not None:
        tok_config["padding_side"] = side
    tok_config = _merged(tok_config, tokenizer_config)
    _write_json(directory / "tokenizer_config.json", tok_config)
    _write_json(directory / "special_tokens_map.json",
                {k: tok_config[k] for k in specials if tok_config.get(k) is not None})
    config: dict[str, Any] = {"model_type": layout.model_type, "architectures": [layout.architecture],
                              "vocab_size": VOCAB_SIZE}
    config.update({k: v for k, v in special_ids(name).items() if v is not None})
    if model_config is None or "config.json" not in model_config:
        _write_json(directory / "config.json", _merged(config, model_config))
    return directory


_cache: dict[str, Path] = {}
_cache_lock = reset_in_child(threading.Lock())
_root: Path | None = None


def tokenizer_repo(
    name: str,
    padding_side: str | None = None,
    model_config: Mapping[str, Any] | None = None,
    tokenizer_config: Mapping[str, Any] | None = None,
) -> Path:
    """A directory holding the layout's repo (see ``write_repo``), built once per process in a temporary
    directory."""
    global _root
    key = json.dumps([name, padding_side, model_config, tokenizer_config], sort_keys=True)
    with _cache_lock:
        if key not in _cache:
            if _root is None:
                _root = Path(tempfile.mkdtemp(prefix="hf_genfix_tok_"))
                atexit.register(shutil.rmtree, _root, True)
            _cache[key] = write_repo(name, _root / f"{name}-{len(_cache)}", padding_side, model_config,
                                     tokenizer_config)
        return _cache[key]


def load_tokenizer(
    name: str,
    padding_side_in_config: str | None = None,
    model_config: Mapping[str, Any] | None = None,
    tokenizer_config: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """``AutoTokenizer.from_pretrained`` on the layout's local repo; ``kwargs`` go to ``from_pretrained``."""
    from transformers import AutoTokenizer

    repo = tokenizer_repo(name, padding_side_in_config, model_config, tokenizer_config)
    return AutoTokenizer.from_pretrained(str(repo), **kwargs)


def _merged(base: Mapping[str, Any], changes: Mapping[str, Any] | None) -> dict[str, Any]:
    out = dict(base)
    for key, value in (changes or {}).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
