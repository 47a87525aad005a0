"""The BERT-style decoders as a kind of the sweep: the encoders that ship a causal-LM head and become decoders
with ``is_decoder=True`` (BERT, RoBERTa and the models on its embeddings, ELECTRA, ERNIE, RoCBert, RoFormer, ...),
and BertGeneration, whose causal-LM class asks for that switch though it has no masked-LM head.

The decoder-only kind leaves them out: their model types are masked LMs first (``decoder_only_types``), and built
with their default config they attend both ways. Users generate with them as decoders, so they are swept here,
built with ``is_decoder=True``, by the decoder-only kind's plainest equivalences against one no-cache forward of
each row alone (the model's own positions, whatever its numbering):

- ``bert-decoder-cached``: greedy cached ``generate()`` of one row;
- ``bert-decoder-left-padded``: a left-padded batch of three rows;
- ``bert-decoder-uncached``: ``use_cache=False`` on a left-padded pair.

Session 38: RoBERTa-style decoders (positions numbered from ``padding_idx + 1``) are wrong in every one of them on
every release from 4.46.3 on: ``generate()`` hands them positions numbered from 0
(prepare-inputs-padding-idx-positions from 5.2, -steps before). Session 39: RoCBert, built once its pronunciation and
shape embeddings were tiny too, numbered a left-padded row from its first pad before 5.0 (its own
``prepare_inputs_for_generation`` gave no positions: prepare-inputs-mask-positions-roc-bert).
"""

from __future__ import annotations

import re
from typing import Any

from ..outcome import ProbeSkipped
from . import core as sweep

KIND = "bert-decoder"
PREFIX = "bert-decoder-"


def bert_decoder_types() -> list[str]:
    """Model types with both a causal-LM and a masked-LM head (encoders that can be built as decoders), and the
    causal-LM types whose class asks for ``is_decoder=True`` without setting it (``decoder_by_switch``)."""
    from transformers.models.auto import modeling_auto as auto

    causal = dict(auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    masked = set(getattr(auto, "MODEL_FOR_MASKED_LM_MAPPING_NAMES", {}))
    seq2seq = set(getattr(auto, "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", {}))  # the encoder-decoder kind's
    switched = {t for t in set(causal) - masked - seq2seq if decoder_by_switch(t, causal[t])}
    return sorted(((set(causal) & masked) | switched) - seq2seq)


_ASKS = re.compile(r"\bnot\s+config\.is_decoder\b")
_SETS = re.compile(r"\bconfig\.is_decoder\s*=\s*True\b")


def decoder_by_switch(model_type: str, class_name: Any) -> bool:
    """Whether ``model_type``'s causal-LM class is an encoder until the config says ``is_decoder=True``: its
    ``__init__`` tests ``not config.is_decoder`` (a warning, "add is_decoder=True" in BertGeneration's words) and
    does not set it itself (the encoder-decoder families' ``*ForCausalLM`` do). Read from the modeling file's text,
    not by importing ~200 model modules to list the kinds. Until session 40 the only such type, BertGeneration, was
    never swept: not a masked LM, it fell to the decoder-only kind, which skips what its default config leaves
    bidirectional."""
    import ast
    from pathlib import Path

    import transformers
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    name = class_name[0] if isinstance(class_name, (list, tuple)) else class_name
    folder = Path(transformers.__file__).parent / "models" / model_type_to_module_name(model_type)
    for path in sorted(folder.glob("modeling_*.py")):
        text = path.read_text(encoding="utf-8")
        if f"class {name}(" not in text or not _ASKS.search(text):
            continue
        for node in ast.parse(text).body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
                code = "" if init is None else ast.get_source_segment(text, init) or ""
                return bool(_ASKS.search(code)) and not _SETS.search(code)
    return False


class BertDecoderSubject(sweep.Subject):
    """A ``Subject`` built with ``is_decoder=True`` (its draft and copy too)."""

    kind = KIND
    config_overrides = {"is_decoder": True}

    def __init__(self, model_type: str):
        # X-MOD routes each layer through one language's adapter and refuses a forward until it has a default
        # language (``set_default_language``): its config's own first language.
        if model_type == "xmod":
            self.config_overrides = {**self.config_overrides, "default_language": "en_XX"}
        super().__init__(model_type)

    def _check_causal_and_cache(self) -> bool:
        (row,) = self.rows(8, seed=99)
        if not self._first_position_causal(self.model, row):
            # XLM's switch is its own ``causal``: with is_decoder=True it still attends both ways, and every
            # cached answer would differ by construction.
            raise ProbeSkipped("not causal with is_decoder=True: not a decoder this way")
        return super()._check_causal_and_cache()


sweep.architecture_kind(KIND, bert_decoder_types, BertDecoderSubject, 2)


def _as(name: str, needs: tuple[str, ...] = ()) -> None:
    """Register the decoder-only scenario ``name`` for this kind, as ``bert-decoder-<name>``."""
    plain = sweep.SCENARIOS[name]

    def run(s: Any) -> dict:
        return plain(s)

    run.__name__ = (PREFIX + name).replace("-", "_")
    run.__doc__ = plain.__doc__
    sweep.scenario(PREFIX + name, needs=needs, kind=KIND)(run)


_as("cached")
_as("left-padded", needs=("padding",))
_as("uncached")
