"""The tokenizer kind of the sweep (issue 36 §1: recall missed every tokenizer and collator defect, because no
scenario called a tokenizer). Subjects are the project's local tokenizer repos (``oracles.tokenizers.LAYOUTS``:
Llama-3, Llama-2, Mistral, GPT-2, Qwen2 and Gemma layouts, written from their published shapes, never downloaded)
with a tiny model of the layout's architecture; every scenario loads the tokenizer afresh, as a user's program does
(``AutoTokenizer.from_pretrained`` on the repo, then ``if tok.pad_token is None: tok.pad_token = tok.eos_token``,
the line transformers' own docs and most training scripts write), so the run without hf_genfix loads it without
hf_genfix. The equivalences, each true by definition:

- ``tokenizer-batch``: ``generate(**tok(texts, padding=True))`` ≡ each text's no-cache forward alone (batch ≡
  rows: the side and the pad a tokenizer chose must not change any row's tokens or logits);
- ``remote-tokenizer-batch`` (the remote-code kind, the families that ship a tokenizer: ChatGLM-3's own, Qwen-1's
  slow one): the same with the family's remote tokenizer (``legacy_models.check_family_tokenizer``,
  ``check_family_plain_tokenizer``);
- ``tokenizer-collator``: ``DataCollatorForLanguageModeling(tok, mlm=False)`` of rows that end with eos gives
  labels = the ids at every real position and -100 at the padding (the collator's documented contract: padding
  ignored, every real token a label -- eos included, which a model trained without it never learns to emit).
"""

from __future__ import annotations

from typing import Any, Sequence

from .. import legacy_models, tokenizers
from ..generation import check_rows_against_reference, generate_steps
from ..outcome import DefectObserved, ProbeSkipped
from . import core as sweep

PREFIX = "tokenizer-"
KIND = "tokenizer"
TEXTS = ("the quick brown fox", "hello", "the lazy dog jumps over the quick brown fox again")


def tokenizer_types() -> list[str]:
    return [PREFIX + name for name in tokenizers.LAYOUTS]


class TokenizerSubject:
    """One local tokenizer layout and a tiny model of its architecture (vocabulary 128, the layout's special ids)."""

    kind = KIND

    def __init__(self, model_type: str):
        from ..tiny import calibrate, tiny_model

        self.model_type = model_type
        self.layout = model_type[len(PREFIX):]
        layout = tokenizers.layout_of(self.layout)
        ids = {k: v for k, v in tokenizers.special_ids(self.layout).items() if v is not None}
        self.model = calibrate(tiny_model(layout.model_type, **ids))
        self.repo = str(tokenizers.tokenizer_repo(self.layout))

    def lacks(self, needs: Sequence[str]) -> str:
        return ""

    def load(self) -> Any:
        """The tokenizer as a user's program has it: loaded, and given its eos as pad where it has none."""
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(self.repo)
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        return tok


sweep.architecture_kind(KIND, tokenizer_types, TokenizerSubject, 2)


def _tokenizer_scenario(name: str, kind: str = KIND) -> Any:
    """A scenario that calls a tokenizer: recall may then try the tokenizer and collator patches on it."""

    def register(func: Any) -> Any:
        func = sweep.scenario(name, kind=kind)(func)
        func.calls_tokenizer = True
        return func

    return register


@_tokenizer_scenario("tokenizer-batch")
def tokenizer_batch(s: TokenizerSubject) -> dict:
    tok = s.load()
    rows = [tok(text)["input_ids"] for text in TEXTS]
    batch = tok(list(TEXTS), padding=True, return_tensors="pt")
    run = generate_steps(s.model, batch["input_ids"], batch["attention_mask"], max_new_tokens=4,
                         pad_token_id=tok.pad_token_id, eos_token_id=None)
    return check_rows_against_reference(s.model, rows, run, f"{s.layout}: generate() of the tokenizer's padded "
                                        f"batch (padding side {tok.padding_side!r}) vs each text alone",
                                        eos_token_id=[])


@_tokenizer_scenario("tokenizer-collator")
def tokenizer_collator(s: TokenizerSubject) -> dict:
    from transformers import DataCollatorForLanguageModeling

    tok = s.load()
    if tok.eos_token_id is None:
        raise ProbeSkipped(f"{s.layout}: the tokenizer has no eos token")
    rows = [tok(text)["input_ids"] + [tok.eos_token_id] for text in TEXTS]
    batch = DataCollatorForLanguageModeling(tokenizer=tok, mlm=False)([{"input_ids": r} for r in rows])
    ids, mask, labels = batch["input_ids"], batch["attention_mask"], batch["labels"]
    expected = ids.masked_fill(mask == 0, -100)
    if labels.tolist() != expected.tolist():
        dropped = int(((labels == -100) & (mask == 1)).sum())
        kept_pads = int(((labels != -100) & (mask == 0)).sum())
        raise DefectObserved(f"{s.layout}: DataCollatorForLanguageModeling(mlm=False) labels differ from the ids at "
                             f"the real positions: {dropped} real token(s) not labels (pad id {tok.pad_token_id}, "
                             f"eos id {tok.eos_token_id}), {kept_pads} pad(s) labelled",
                             real_tokens_dropped=dropped, pads_labelled=kept_pads)
    return {"labels": int((labels != -100).sum()), "rows": len(rows)}


# The remote-code families that ship a tokenizer: their tokenizer's padded batch through generate(). ChatGLM-3's
# repo has its own; Qwen-1's ships a slow tokenizer that adds no special tokens, the shape 5.0-5.1 gave [CLS]/[SEP]
# of None ids (remote-code-tokenizer-special-tokens, missed by the recall on 5.0.0 until this family had one).
_TOKENIZER_FAMILIES = {"chatglm3": legacy_models.check_family_tokenizer,
                       "qwen": legacy_models.check_family_plain_tokenizer}


@_tokenizer_scenario("remote-tokenizer-batch", kind="remote-code")
def remote_tokenizer_batch(s: Any) -> dict:
    if s.family not in _TOKENIZER_FAMILIES:
        raise ProbeSkipped(f"{s.family}: the tiny repo ships no tokenizer")
    figures = _TOKENIZER_FAMILIES[s.family](s.family)
    return {k: v for k, v in figures.items() if k != "rows"}
