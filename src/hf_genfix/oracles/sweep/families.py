"""``hf-genfix doctor --sweep`` beyond decoder-only: encoder-decoder and image-text architectures.

``oracles.sweep`` sweeps the decoder-only model types; this module registers two more architecture kinds
(``sweep.architecture_kind``) and their scenarios (``sweep.scenario(..., kind=...)``):

- ``encoder-decoder``: every sequence-to-sequence LM type of the release that builds tiny from a text config
  (bart, t5, mt5, umt5, longt5, led, pegasus, pegasus_x, marian, m2m_100, nllb-moe, bigbird_pegasus, mbart,
  blenderbot, blenderbot-small, plbart, prophetnet, fsmt, mvp, switch_transformers, seamless_m4t text-to-text ...).
  The oracle of every scenario is one no-cache forward of the model over the row's unpadded encoder input and the
  final decoder sequence: cached and uncached ``generate()``, a right-padded encoder batch (the encoder's
  ``attention_mask``) against each row alone, a static cache, and beam search on a padded batch against each row
  alone.
- ``image-text``: the image-text-to-text models this module knows how to build tiny (``IMAGE_TEXT``: LLaVA and
  its variants, PaliGemma, Gemma-3, Qwen2-VL / Qwen2.5-VL, ...), with a one-layer vision tower. The oracle is one
  no-cache forward over prompt + image + generated tokens with that row's own image (``pixel_values`` and the
  model's ``token_type_ids`` / grid sizes); scenarios: cached, uncached, a left-padded batch of two prompts with
  different images against each row alone, and a static cache where the model accepts one.

A scenario a model refuses with a clear error is ``unsupported`` (``core._UNSUPPORTED``), not a finding.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, Sequence

from .. import sliding_static
from ..generation import check_rows_against_reference, generate_steps, right_pad
from ..outcome import DefectObserved, ProbeSkipped
from ..precision import cast, tolerance
from ..sliding import TIE
from ..tiny import calibrate, tiny_config
from . import core as sweep

ENCODER_DECODER, IMAGE_TEXT_KIND = "encoder-decoder", "image-text"
QUICK_PER_KIND = 4  # architectures of each of these kinds on ``doctor --sweep --quick``

# -- encoder-decoder ----------------------------------------------------------------------------------------------
# The size keys of every sequence-to-sequence config family (BART's encoder_*/decoder_*, T5's d_*/num_*), on top
# of tiny.TINY_DEFAULTS; a config ignores the ones it does not have.
SEQ2SEQ_KEYS: dict[str, Any] = dict(
    d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
    encoder_ffn_dim=64, decoder_ffn_dim=64, num_layers=2, num_decoder_layers=2, num_heads=4, d_ff=64, d_kv=8,
    num_encoder_layers=2, num_encoder_attention_heads=4, num_decoder_attention_heads=4, decoder_start_token_id=1,
    num_key_value_heads=None,
)
_SEQ2SEQ_PER_TYPE: dict[str, dict[str, Any]] = {
    "fsmt": dict(src_vocab_size=128, tgt_vocab_size=128, langs=["en", "de"]),
    "led": dict(max_encoder_position_embeddings=256, max_decoder_position_embeddings=256, attention_window=[4, 4]),
    # Block-sparse attention needs prompts of several 64-token blocks; the full attention is what generate() uses
    # below that length anyway.
    "bigbird_pegasus": dict(attention_type="original_full"),
    "pegasus_x": dict(block_size=4, num_global_tokens=4),
    "longt5": dict(local_radius=4, global_block_size=4),
    "switch_transformers": dict(num_experts=2, num_sparse_encoder_layers=1, num_sparse_decoder_layers=1,
                                expert_capacity=64),
    "nllb-moe": dict(num_experts=2, expert_capacity=64),
    # ProphetNet refuses num_hidden_layers (it has num_encoder_layers / num_decoder_layers).
    "prophetnet": dict(ngram=2, num_buckets=8, num_hidden_layers=None),
    "xlm-prophetnet": dict(ngram=2, num_buckets=8, num_hidden_layers=None),
}


def encoder_decoder_types() -> list[str]:
    from transformers.models.auto import modeling_auto as auto

    return sorted(getattr(auto, "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", {}))


def build_seq2seq(model_type: str, seed: int = 0) -> Any:
    """A tiny sequence-to-sequence LM of ``model_type`` with a plain greedy generation config (no eos, so every
    run goes the whole length; no forced or suppressed tokens, no default beams: the oracle compares raw logits)."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, GenerationConfig

    config = tiny_config(model_type, **dict(SEQ2SEQ_KEYS, **_SEQ2SEQ_PER_TYPE.get(model_type, {})))
    if sweep._composite(config):
        raise ProbeSkipped("composite config (an audio or a second model's part): not built tiny from a text config")
    model = _checked_build(lambda: AutoModelForSeq2SeqLM.from_config(config), seed)
    model.generation_config = GenerationConfig(
        pad_token_id=0, bos_token_id=1, eos_token_id=None,
        decoder_start_token_id=getattr(config, "decoder_start_token_id", None) or 1)
    return model


def _checked_build(make: Callable[[], Any], seed: int) -> Any:
    """``make()`` under the size limit of the sweep (counted on the meta device first), float32, eval mode."""
    import torch

    try:
        with torch.device("meta"):
            params = sum(p.numel() for p in make().parameters())
    except ProbeSkipped:
        raise
    except Exception as exc:  # noqa: BLE001 - a config the tiny sizes do not satisfy
        raise ProbeSkipped(f"cannot build from a tiny config: {type(exc).__name__}: {sweep._short(exc)}") from exc
    if params > sweep.MAX_PARAMS:
        raise ProbeSkipped(f"the tiny config still gives {params / 1e6:.1f}M parameters")
    torch.manual_seed(seed)
    with torch.no_grad(), torch.device("cpu"):  # CUDA's generator would draw other weights for the seed
        model = make()
    return cast(calibrate(model.float()).eval())  # loud: the sweep's calibration rule (oracles.tiny)


class Seq2SeqSubject:
    """One encoder-decoder architecture built tiny (``sweep.Subject``'s interface for the sweep's judging)."""

    kind = ENCODER_DECODER

    def __init__(self, model_type: str):
        self.model_type = model_type
        self.model = build_seq2seq(model_type)
        self.vocab = 128
        self._padding: str | None = None
        (row,) = self.rows(6, seed=99)
        self.reference(row, [1, 5])  # a forward that fails here makes every scenario fail alike: not built
        # The oracle is one forward over the final decoder sequence, read at every position: it holds only for a
        # decoder whose logits at a position do not depend on the tokens after it. ProphetNet's n-gram predicting
        # streams do (4.46.3: 3.9e-4 at position 0 between a forward of [start] and of [start, 5, 9]; generate(),
        # cached or not, equals the forward of the prefix exactly), so it is not swept rather than misjudged.
        short, long = self.reference(row, [1]), self.reference(row, [1, 5, 9])
        drift = float((short[0] - long[0]).abs().max())
        if not drift <= tolerance():
            raise ProbeSkipped(f"its decoder's logits at a position change with the tokens after it ({drift:.3g} at "
                               "position 0): no single-forward oracle for it")

    rows = sweep.Subject.rows

    def reference(self, encoder_row: Sequence[int], decoder_ids: Sequence[int]) -> Any:
        """Logits ``(len(decoder_ids), vocab)`` of one no-cache forward: the unpadded encoder row, the decoder
        sequence."""
        import torch

        enc = torch.tensor([list(encoder_row)], device=self.model.device)
        dec = torch.tensor([list(decoder_ids)], device=self.model.device)
        with torch.no_grad():
            out = self.model(input_ids=enc, attention_mask=torch.ones_like(enc), decoder_input_ids=dec,
                             use_cache=False)
        return out.logits[0].float()

    def padding_problem(self) -> str:
        """Why the encoder cannot take a right-padded row ("" when it can): its mask must make the pads invisible."""
        import torch

        if self._padding is None:
            (row,) = self.rows(6, seed=97)
            enc = torch.tensor([row + [0, 0]])
            mask = torch.tensor([[1] * len(row) + [0, 0]])
            dec = torch.tensor([[1, 5, 9]])
            with torch.no_grad():
                padded = self.model(input_ids=enc, attention_mask=mask, decoder_input_ids=dec, use_cache=False)
            diff = float((padded.logits[0].float() - self.reference(row, [1, 5, 9])).abs().max())
            self._padding = "" if diff <= tolerance() else (
                f"a right-padded encoder row differs from the unpadded row by {diff:.3g} in one no-cache forward: "
                "its encoder cannot take padding")
        return self._padding

    def lacks(self, needs: Sequence[str]) -> str:
        return self.padding_problem() if "padding" in needs else ""


def _seq2seq_steps(s: Seq2SeqSubject, rows: list[list[int]], what: str, **kwargs: Any) -> dict:
    """A right-padded encoder batch through ``generate()``: every row's every step against the no-cache forward
    of its unpadded encoder row and its final decoder sequence."""
    ids, mask = right_pad(rows, device=s.model.device)
    run = generate_steps(s.model, ids, mask, **dict(dict(max_new_tokens=6), **kwargs))
    run = dataclasses.replace(run, prompt_width=1)  # the decoder's prompt: its start token
    starts = [[int(run.sequences[b, 0])] for b in range(len(rows))]
    return check_rows_against_reference(s.model, starts, run, what, eos_token_id=[],
                                        reference=lambda b, tokens: s.reference(rows[b], tokens))


@sweep.scenario("s2s-cached", kind=ENCODER_DECODER)
def s2s_cached(s: Seq2SeqSubject) -> dict:
    return _seq2seq_steps(s, s.rows(9), "encoder-decoder, cached generate() vs no-cache forward", use_cache=True)


@sweep.scenario("s2s-uncached", kind=ENCODER_DECODER)
def s2s_uncached(s: Seq2SeqSubject) -> dict:
    return _seq2seq_steps(s, s.rows(9, seed=1), "encoder-decoder, generate(use_cache=False) vs no-cache forward",
                          use_cache=False)


@sweep.scenario("s2s-padded", needs=("padding",), kind=ENCODER_DECODER)
def s2s_padded(s: Seq2SeqSubject) -> dict:
    return _seq2seq_steps(s, s.rows(7, 3, 10, seed=2), "encoder-decoder, right-padded encoder batch vs each row "
                          "alone")


@sweep.scenario("s2s-static-cache", kind=ENCODER_DECODER)
def s2s_static_cache(s: Seq2SeqSubject) -> dict:
    return _seq2seq_steps(s, s.rows(8, 5, seed=3), "encoder-decoder, static cache, padded encoder batch",
                          cache_implementation="static")


# -- continuations of an encoder-decoder's cache (issue 36, section 3): the same equivalences as the decoder-only
# second-turn and prefix-reuse scenarios, on the decoder side; the oracle is still one no-cache forward over the
# unpadded encoder row and the whole decoder sequence.
S2S_NEW = 4


def _s2s_continue(s: Seq2SeqSubject, rows: list[list[int]], decoder: Any, cache: Any, what: str) -> dict:
    """generate() from ``cache`` with the decoder sequence ``decoder`` (a batch, no pads: every row's decoder has
    the same length), every new step against the no-cache forward of its row."""
    ids, mask = right_pad(rows, device=s.model.device)
    run = generate_steps(s.model, ids, mask, max_new_tokens=S2S_NEW, decoder_input_ids=decoder,
                         past_key_values=cache, pad_token_id=0, eos_token_id=None, min_new_tokens=S2S_NEW)
    run = dataclasses.replace(run, prompt_width=decoder.shape[1])
    return check_rows_against_reference(s.model, [decoder[b].tolist() for b in range(len(rows))], run, what,
                                        eos_token_id=[], reference=lambda b, tokens: s.reference(rows[b], tokens))


def _s2s_second_turn(s: Seq2SeqSubject, rows: list[list[int]], turn: list[int]) -> dict:
    """A first generate(), then a second from its returned cache with ``turn`` appended to each decoder sequence."""
    import torch

    ids, mask = right_pad(rows, device=s.model.device)
    with torch.no_grad():
        out = s.model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=S2S_NEW,
                               min_new_tokens=S2S_NEW, pad_token_id=0, eos_token_id=None,
                               return_dict_in_generate=True)
    cache = getattr(out, "past_key_values", None)
    if cache is None:
        raise ProbeSkipped("generate() returns no cache on this model (return_dict_in_generate=True)")
    decoder = torch.cat([out.sequences, torch.tensor([turn] * len(rows), device=ids.device)], dim=1)
    return _s2s_continue(s, rows, decoder, cache, "encoder-decoder, second turn continuing from "
                         "out.past_key_values")


def _s2s_prefix_reuse(s: Seq2SeqSubject, rows: list[list[int]], prefix: list[int],
                      continuations: list[list[int]]) -> dict:
    """The decoder prefix prefilled once by a forward into a cache, then one generate() per continuation from a
    deepcopy of it."""
    import copy

    import torch

    ids, mask = right_pad(rows, device=s.model.device)
    start = [int(s.model.generation_config.decoder_start_token_id)]
    decoder = torch.tensor([start + prefix] * len(rows), device=ids.device)
    with torch.no_grad():
        cache = s.model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder, use_cache=True).past_key_values
    if cache is None:
        raise ProbeSkipped("the forward returns no cache")
    figures: dict[str, Any] = {"max_logit_diff": 0.0, "steps_compared": 0}
    for cont in continuations:
        longer = torch.cat([decoder, torch.tensor([cont] * len(rows), device=ids.device)], dim=1)
        got = _s2s_continue(s, rows, longer, copy.deepcopy(cache),
                            "encoder-decoder, prefix cache reused (past_key_values=deepcopy(cache))")
        figures["max_logit_diff"] = max(figures["max_logit_diff"], got["max_logit_diff"])
        figures["steps_compared"] += got["steps_compared"]
    return figures


# Model types whose decoder is not made to take several tokens after a cache, which every continuation feeds: FSMT's
# keeps only the last decoder token when use_cache is on (up to 5.17: written for a caller that feeds the whole
# sequence each step and reads one new logit) and builds its causal mask only without a cache. Not run there
# (unsupported, with this reason), rather than judged against an oracle the model never claims to meet.
NO_CHUNK_AFTER_CACHE = {
    "fsmt": "FSMT's decoder keeps only the last decoder token under use_cache (up to 5.17) and builds its causal "
            "mask only without a cache: several decoder tokens after a cache are outside what it does",
}


def _declines_continuation(s: Seq2SeqSubject) -> str:
    return NO_CHUNK_AFTER_CACHE.get(s.model_type, "")


def _s2s_batches(s: Seq2SeqSubject, seed: int) -> list[list[list[int]]]:
    """One encoder row, and a right-padded encoder batch of three where the encoder takes padding."""
    batches = [s.rows(9, seed=seed)]
    if not s.padding_problem():
        batches.append(s.rows(7, 3, 10, seed=seed + 1))
    return batches


@sweep.scenario("s2s-second-turn", kind=ENCODER_DECODER)
def s2s_second_turn(s: Seq2SeqSubject) -> dict:
    (turn,) = s.rows(3, seed=5)
    results = [_s2s_second_turn(s, rows, turn) for rows in _s2s_batches(s, seed=61)]
    return {"max_logit_diff": max(r["max_logit_diff"] for r in results),
            "steps_compared": sum(r["steps_compared"] for r in results)}


s2s_second_turn.declines = _declines_continuation


@sweep.scenario("s2s-prefix-reuse", kind=ENCODER_DECODER)
def s2s_prefix_reuse(s: Seq2SeqSubject) -> dict:
    (prefix,) = s.rows(3, seed=7)
    continuations = s.rows(2, 4, seed=13)
    results = [_s2s_prefix_reuse(s, rows, prefix, continuations) for rows in _s2s_batches(s, seed=71)]
    return {"max_logit_diff": max(r["max_logit_diff"] for r in results),
            "steps_compared": sum(r["steps_compared"] for r in results)}


s2s_prefix_reuse.declines = _declines_continuation


@sweep.scenario("s2s-beam", needs=("padding",), kind=ENCODER_DECODER)
def s2s_beam(s: Seq2SeqSubject) -> dict:
    """Beam search (3 beams, 2 returned) on a right-padded encoder batch: each row's sequences are those it gets
    alone (up to a numerical tie of the reference), and each returned sequence's score is the one a no-cache forward
    gives it (its summed log-probabilities over its new tokens, divided by their count: length_penalty 1), so that a
    beam search that is wrong the same way in a batch and alone (a misplaced cached token, say) fails too."""
    import torch

    rows = s.rows(8, 4, seed=4)
    common = dict(num_beams=3, num_return_sequences=2, max_new_tokens=5, do_sample=False, early_stopping=True,
                  length_penalty=1.0, return_dict_in_generate=True, output_scores=True)
    worst = 0.0
    with torch.no_grad():
        ids, mask = right_pad(rows, device=s.model.device)
        batched = s.model.generate(ids, attention_mask=mask, **common)
        batch = batched.sequences
        for b, row in enumerate(rows):
            ids, mask = right_pad([row], device=s.model.device)
            alone = s.model.generate(ids, attention_mask=mask, **common)
            for r in range(2):
                a, c = batch[2 * b + r].tolist(), alone.sequences[r].tolist()
                if a != c and not _tie(lambda tokens: s.reference(row, tokens), a, c):
                    raise DefectObserved(f"encoder-decoder beam search: row {b}, beam {r} in a padded batch {a} != "
                                         f"alone {c}", row=b, step=sweep._first_diff(a, c))
                if a == c:
                    # batch == rows holds for the scores too: a beam that cross-attends to the encoder's pads (4.49
                    # drops the encoder mask) can keep the same tokens on a tame model and still score them wrongly
                    # (bigbird_pegasus: 0.239).
                    apart = abs(float(batched.sequences_scores[2 * b + r]) - float(alone.sequences_scores[r]))
                    if apart > 1e-3:
                        raise DefectObserved(f"encoder-decoder beam search: row {b}, beam {r} {c}: score "
                                             f"{float(batched.sequences_scores[2 * b + r]):.6g} in a padded batch != "
                                             f"{float(alone.sequences_scores[r]):.6g} alone", row=b,
                                             max_logit_diff=apart)
                logprobs = torch.log_softmax(s.reference(row, c[:-1]), dim=-1)
                expected = float(logprobs[torch.arange(len(c) - 1), torch.tensor(c[1:])].sum()) / (len(c) - 1)
                diff = abs(float(alone.sequences_scores[r]) - expected)
                worst = max(worst, diff)
                if diff > 1e-3:
                    raise DefectObserved(f"encoder-decoder beam search: row {b} alone, beam {r} {c}: score "
                                         f"{float(alone.sequences_scores[r]):.6g} != {expected:.6g} from a no-cache "
                                         f"forward", row=b, max_logit_diff=diff)
    return {"rows": len(rows), "max_score_diff": worst}


def _tie(reference: Callable[[list[int]], Any], a: list[int], b: list[int], margin: float = TIE) -> bool:
    """Two sequences that part where the reference's logits of the two tokens are within ``margin``."""
    step = sweep._first_diff(a, b)
    if step == 0 or step >= min(len(a), len(b)):
        return False
    logits = reference(a[:step])[-1]
    return abs(float(logits[a[step]]) - float(logits[b[step]])) < margin


sweep.architecture_kind(ENCODER_DECODER, encoder_decoder_types, Seq2SeqSubject, QUICK_PER_KIND)


# -- image-text ---------------------------------------------------------------------------------------------------
# The tiny vocabulary (128 tokens: 0 pad, 1 bos, 2 eos) holds the image placeholders at its top; prompts draw
# their text from 3..99, and generation suppresses BOI..127 (a generated placeholder would be an image without
# pixels), so the oracle compares the other columns.
BOI, EOI, IMAGE = sliding_static.BOI, sliding_static.EOI, sliding_static.IMAGE
_SPECIAL = list(range(BOI, 128))
_TEXT = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=8, max_position_embeddings=256, pad_token_id=0, bos_token_id=1,
             eos_token_id=2, tie_word_embeddings=False)
# One-layer vision towers: a 16x16 image in 4x4 patches gives 16 patch features.
_CLIP = dict(model_type="clip_vision_model", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
             num_attention_heads=2, image_size=16, patch_size=4, projection_dim=16)
_SIGLIP = dict(model_type="siglip_vision_model", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
               num_attention_heads=2, image_size=16, patch_size=4)
_QWEN_GRID = (1, 4, 4)  # temporal x height x width patches of 2x2 pixels: 16 patches, merged 2x2 into 4 tokens


def _text(model_type: str, **extra: Any) -> dict:
    return dict(_TEXT, model_type=model_type, **extra)


@dataclasses.dataclass
class ImageText:
    """How to build one image-text architecture tiny and lay out its prompts.

    ``config``: keyword arguments of ``AutoConfig.for_model`` (or ``build``: a function of the seed that returns
    the model); ``image_tokens``: placeholders per image; ``layout``: where they go (``llava``: bos, image, text;
    ``prefix``: image, bos, text; ``boi``: bos, text, BOI image EOI, text); ``pixels``: one image's inputs
    (tensors with a leading image dimension, concatenated for a batch); ``token_types``: the ``token_type_ids``
    the model takes (``image``: 1 on placeholders; ``prefix``: 0 on the prompt, 1 on generated tokens)."""

    config: Callable[[], dict] | None = None
    build: Callable[[int], Any] | None = None
    image_tokens: int = 16
    layout: str = "llava"
    pixels: Callable[[Any], dict] | None = None  # one image's inputs from a CPU generator; default (1, 3, 16, 16)
    token_types: str | None = None
    since: str = "0"  # the first release whose tiny model of this layout runs (an older one is not built)
    # The reference hands the model its masks written out from their definition (``sliding_static``'s image
    # masks): where hf_genfix corrects the model's own image masks (Gemma-3 / Gemma-4 sliding windows), a no-cache
    # forward through those masks is no oracle.
    explicit_masks: bool = False


def _image(gen: Any) -> dict:
    import torch

    return {"pixel_values": torch.rand(1, 3, 16, 16, generator=gen, device="cpu")}


def _qwen_patches(gen: Any) -> dict:
    """Qwen2-VL's processor output: flattened 2x2 (x2 frames) patches and their grid."""
    import torch

    t, h, w = _QWEN_GRID
    return {"pixel_values": torch.rand(t * h * w, 3 * 2 * 2 * 2, generator=gen, device="cpu"),
            "image_grid_thw": torch.tensor([[t, h, w]])}


def _gemma4_patches(gen: Any) -> dict:
    """Gemma-4's vision input: 64 patches of 2x2 pixels and their (x, y) places (``sliding_static``)."""
    import torch

    grid = torch.stack(torch.meshgrid(torch.arange(8), torch.arange(8), indexing="xy"), -1).reshape(1, 64, 2)
    return {"pixel_values": torch.rand(1, 64, 12, generator=gen, device="cpu"), "image_position_ids": grid}


def _with_sizes(gen: Any) -> dict:
    import torch

    return dict(_image(gen), image_sizes=torch.tensor([[16, 16]]))


def _one_per_row(gen: Any) -> dict:
    """Idefics-2/3, SmolVLM: (batch, images per row, 3, 16, 16) and the pixels' mask."""
    import torch

    return {"pixel_values": torch.rand(1, 1, 3, 16, 16, generator=gen, device="cpu"),
            "pixel_attention_mask": torch.ones(1, 1, 16, 16, dtype=torch.bool)}


def _with_qformer_text(gen: Any) -> dict:
    """InstructBLIP: the instruction also goes to the Q-Former (the same 3 tokens for every row)."""
    import torch

    return dict(_image(gen), qformer_input_ids=torch.tensor([[5, 6, 7]]),
                qformer_attention_mask=torch.ones(1, 3, dtype=torch.long))


_VISION = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=16,
               patch_size=4)
_QFORMER = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                encoder_hidden_size=16, vocab_size=128, max_position_embeddings=64)
_OPT = dict(model_type="opt", vocab_size=128, hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
            word_embed_proj_dim=32, max_position_embeddings=256, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def _qwen2_vl() -> dict:
    vision = dict(depth=1, embed_dim=16, hidden_size=32, num_heads=2, patch_size=2, spatial_merge_size=2,
                  temporal_patch_size=2, in_channels=3, in_chans=3, mlp_ratio=2)
    # Multimodal rotary sections over the 4 frequencies of head_dim 8 (temporal, height, width).
    rope = {"type": "mrope", "rope_type": "default", "mrope_section": [1, 1, 2]}
    import transformers

    key = "rope_parameters" if int(transformers.__version__.split(".")[0]) >= 5 else "rope_scaling"  # 5.0 renamed it
    text = {"text_config": _text("qwen2_vl_text", **{key: rope})}
    if getattr(transformers.Qwen2VLConfig, "sub_configs", None) is None:
        # 4.46's config is flat (no sub-configs): it keeps a text_config dict as a plain attribute that its model
        # cannot serialise ('dict' object has no attribute 'to_dict'), and the 4.46.3 sweep built no Qwen2-VL. The
        # same text sizes are given at the top level below.
        text = {}
    return dict(**text, vision_config=vision, **{key: rope},
                image_token_id=IMAGE, video_token_id=123, vision_start_token_id=BOI, vision_end_token_id=EOI,
                **{k: v for k, v in _TEXT.items() if k != "head_dim"})


def _qwen2_5_vl() -> dict:
    config = _qwen2_vl()
    config["text_config"]["model_type"] = "qwen2_5_vl_text"
    config["vision_config"] = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=32,
                                   patch_size=2, spatial_merge_size=2, temporal_patch_size=2, in_channels=3,
                                   in_chans=3, window_size=8, fullatt_block_indexes=[0])
    return config


IMAGE_TEXT: dict[str, ImageText] = {
    "llava": ImageText(lambda: dict(text_config=_text("llama"), vision_config=_CLIP, image_token_index=IMAGE,
                                    image_token_id=IMAGE, image_seq_length=16, vision_feature_layer=-1,
                                    vision_feature_select_strategy="default")),
    # image_seq_length: 4.46's LLaVA-NeXT and VipLLaVA take a prompt with fewer placeholders than it (576 by
    # default) for an unexpanded one (their legacy merge) and refuse the tiny prompts.
    "vipllava": ImageText(lambda: dict(text_config=_text("llama"), vision_config=_CLIP, image_token_index=IMAGE,
                                       image_token_id=IMAGE, vision_feature_layers=[-2, -1], image_seq_length=16)),
    "paligemma": ImageText(lambda: dict(text_config=_text("gemma"), vision_config=_SIGLIP, image_token_index=IMAGE,
                                        image_token_id=IMAGE, projection_dim=32, hidden_size=32),
                           layout="prefix", token_types="prefix"),
    "gemma3": ImageText(build=lambda seed: sliding_static.tiny_gemma3_vlm(attn="eager", seed=seed),
                        image_tokens=sliding_static.IMAGE_TOKENS, layout="boi", token_types="image",
                        explicit_masks=True),
    "gemma4": ImageText(build=lambda seed: sliding_static.tiny_gemma4_vlm(attn="eager", seed=seed),
                        image_tokens=sliding_static.IMAGE_TOKENS, layout="boi", token_types="mm",
                        pixels=_gemma4_patches, explicit_masks=True),
    "qwen2_vl": ImageText(_qwen2_vl, image_tokens=4, layout="boi", pixels=_qwen_patches, token_types="mm"),
    "qwen2_5_vl": ImageText(_qwen2_5_vl, image_tokens=4, layout="boi", pixels=_qwen_patches, token_types="mm"),
    # Pixel shuffle / patch merging 2x2: 16 patches give 4 soft tokens.
    "aya_vision": ImageText(lambda: dict(text_config=_text("cohere2"), vision_config=_SIGLIP, downsample_factor=2,
                                         image_token_index=IMAGE, image_token_id=IMAGE,
                                         vision_feature_select_strategy="full"), image_tokens=4),
    "mistral3": ImageText(lambda: dict(text_config=_text("mistral"), image_token_index=IMAGE, image_token_id=IMAGE,
                                       vision_config=dict(_VISION, model_type="pixtral", head_dim=8),
                                       spatial_merge_size=2), image_tokens=4, pixels=_with_sizes),
    "internvl": ImageText(lambda: dict(text_config=_text("qwen2"), image_token_id=IMAGE, image_seq_length=4,
                                       vision_config=dict(_VISION, model_type="internvl_vision", image_size=[16, 16],
                                                          patch_size=[4, 4]), downsample_ratio=0.5),
                          image_tokens=4),
    "idefics3": ImageText(lambda: dict(text_config=_text("llama"), vision_config=_VISION, scale_factor=2,
                                       image_token_id=IMAGE), image_tokens=4, pixels=_one_per_row),
    "smolvlm": ImageText(lambda: dict(text_config=_text("llama"), vision_config=_VISION, scale_factor=2,
                                      image_token_id=IMAGE), image_tokens=4, pixels=_one_per_row),
    "idefics2": ImageText(lambda: dict(text_config=_text("mistral"), vision_config=_VISION, image_token_id=IMAGE,
                                       perceiver_config=dict(hidden_act="silu", resampler_n_latents=4,
                                                             resampler_depth=1, resampler_n_heads=2,
                                                             resampler_head_dim=8, num_key_value_heads=1)),
                          image_tokens=4, pixels=_one_per_row),
    # BLIP-2 / InstructBLIP: 4 Q-Former queries as soft tokens before the text.
    "blip-2": ImageText(lambda: dict(vision_config=_VISION, qformer_config=_QFORMER, text_config=_OPT,
                                     num_query_tokens=4, image_token_index=IMAGE, image_token_id=IMAGE),
                        image_tokens=4, layout="prefix"),
    "instructblip": ImageText(lambda: dict(vision_config=_VISION, qformer_config=_QFORMER, text_config=_OPT,
                                           num_query_tokens=4, image_token_index=IMAGE, image_token_id=IMAGE),
                              image_tokens=4, layout="prefix", pixels=_with_qformer_text),
    "kosmos-2": ImageText(lambda: dict(text_config=dict(vocab_size=128, embed_dim=32, layers=2, ffn_dim=64,
                                                        attention_heads=4, max_position_embeddings=256,
                                                        pad_token_id=0, bos_token_id=1, eos_token_id=2),
                                       vision_config=_VISION, latent_query_num=4),
                          image_tokens=4, layout="boi", token_types="kosmos"),
}


def image_text_types() -> list[str]:
    """The image-text types of ``IMAGE_TEXT`` this release has (the others stay where ``sweep`` lists them)."""
    from transformers.models.auto import configuration_auto

    return sorted(t for t in IMAGE_TEXT if t in configuration_auto.CONFIG_MAPPING_NAMES)


def build_image_text(model_type: str, seed: int = 0) -> Any:
    import transformers
    from packaging.version import Version
    from transformers import AutoConfig

    try:
        from transformers import AutoModelForImageTextToText
    except ImportError as exc:  # 4.46.0 added it
        raise ProbeSkipped("this release has no AutoModelForImageTextToText (added in 4.46)") from exc

    spec = IMAGE_TEXT.get(model_type)
    if spec is None:
        raise ProbeSkipped(f"hf_genfix has no tiny image-text builder for {model_type!r}")
    if Version(Version(transformers.__version__).base_version) < Version(spec.since):
        raise ProbeSkipped(f"the tiny {model_type} model does not run before {spec.since}")
    if spec.build is not None:
        model = spec.build(seed)
    else:
        try:
            config = AutoConfig.for_model(model_type, **spec.config())
        except (KeyError, ValueError, TypeError) as exc:
            raise ProbeSkipped(f"cannot make a tiny {model_type} config: {type(exc).__name__}: "
                               f"{sweep._short(exc)}") from exc
        for part in (config, getattr(config, "text_config", None), getattr(config, "vision_config", None)):
            if part is not None and not isinstance(part, dict):  # 4.51's Qwen2-VL keeps an unknown text_config
                part._attn_implementation = "eager"
        model = _checked_build(lambda: AutoModelForImageTextToText.from_config(config), seed)
    from transformers import GenerationConfig

    model.generation_config = GenerationConfig(pad_token_id=0, bos_token_id=1, eos_token_id=None)
    return model


class ImageTextSubject:
    """One image-text architecture built tiny: prompts with one image each, batched and alone."""

    kind = IMAGE_TEXT_KIND

    def __init__(self, model_type: str):
        self.model_type = model_type
        self.spec = IMAGE_TEXT.get(model_type) or ImageText()
        self.model = build_image_text(model_type)
        (prompt,) = self.prompts(5, seed=99)
        self.reference(prompt, self.image(0), [])  # a forward that fails here fails every scenario: not built

    def lacks(self, needs: Sequence[str]) -> str:
        return ""

    def prompts(self, *lengths: int, seed: int = 0, tokens: Sequence[int] = ()) -> list[list[int]]:
        """Prompts of ``lengths`` text tokens, each with one image block where the layout puts it (of ``tokens``
        placeholders per prompt where given: images of different sizes; else the spec's count)."""
        import torch

        gen = torch.Generator().manual_seed(seed)
        out = []
        for i, n in enumerate(lengths):
            text = torch.randint(3, 100, (n,), generator=gen, device="cpu").tolist()
            image = [IMAGE] * (tokens[i] if tokens else self.spec.image_tokens)
            if self.spec.layout == "prefix":
                out.append(image + [1] + text)
            elif self.spec.layout == "boi":
                out.append([1] + text[:2] + [BOI] + image + [EOI] + text[2:])
            else:
                out.append([1] + image + text)
        return out

    def image(self, seed: int) -> dict:
        """One image's inputs (a leading dimension of 1 image), drawn on the CPU from ``seed``."""
        import torch

        from ..precision import current

        gen = torch.Generator().manual_seed(1000 + seed)
        drawn = (self.spec.pixels or _image)(gen)
        return {k: v.to(device=self.model.device, dtype=current().torch_dtype if v.is_floating_point() else v.dtype)
                for k, v in drawn.items()}

    def token_types(self, ids: Any, generated: int = 0) -> dict:
        import torch

        key = "token_type_ids"
        if self.spec.token_types == "prefix":  # PaliGemma's prefix-LM: generated tokens are the causal suffix
            return {key: torch.nn.functional.pad(torch.zeros_like(ids), (0, generated), value=1)}
        if self.spec.token_types == "mm":
            # Qwen2-VL from 5.x: the M-RoPE positions come from the processor's mm_token_type_ids (1 on images)
            # where the forward takes them; before, from the image token id.
            if "mm_token_type_ids" not in inspect.signature(self.model.forward).parameters:
                return {}
            key = "mm_token_type_ids"
        elif self.spec.token_types == "kosmos":
            key = "image_embeds_position_mask"  # Kosmos-2: where the latent queries go
        elif self.spec.token_types in ("cross", "idefics"):
            # mllama / Idefics 1 attend to the image by cross-attention under a per-token mask: every token from
            # the image's placeholder on sees it (their processors' masks; generate() repeats the last column).
            seen = torch.nn.functional.pad((torch.cumsum((ids == IMAGE).long(), -1) > 0).long(), (0, generated),
                                           value=1)
            if self.spec.token_types == "cross":  # (batch, tokens, images, tiles)
                return {"cross_attention_mask": seen[..., None, None]}
            return {"image_attention_mask": seen[..., None]}  # (batch, tokens, images)
        elif self.spec.token_types != "image":
            return {}
        return {key: torch.nn.functional.pad((ids == IMAGE).long(), (0, generated))}

    def batch(self, prompts: list[list[int]], images: list[dict]) -> dict:
        """Left-padded ``generate()`` inputs: ids, mask, every row's image in row order, token types."""
        import torch

        from ..generation import left_pad

        ids, mask = left_pad(prompts, device=self.model.device)
        kwargs = dict(input_ids=ids, attention_mask=mask, **self.token_types(ids))
        for key in images[0]:
            kwargs[key] = torch.cat([image[key] for image in images])
        return kwargs

    def reference(self, prompt: Sequence[int], image: dict, generated: Sequence[int]) -> Any:
        """Logits of one no-cache forward over prompt + generated tokens with the row's own image; the columns of
        the suppressed placeholders are set to -1e4 (``_mask``)."""
        import torch

        ids = torch.tensor([list(prompt) + list(generated)], device=self.model.device)
        kwargs = dict(input_ids=ids, attention_mask=torch.ones_like(ids), **image)
        types = self.token_types(ids[:, :len(prompt)], generated=len(generated))
        if self.spec.token_types == "prefix":
            # The prefix-LM written out (4.x reads no token types outside training and makes a forward's whole
            # input the prefix): the prompt sees itself both ways, a generated token sees the prompt and the
            # tokens before it. Given as an additive 4-D mask, which both release lines take as it is.
            n, width = len(prompt), ids.shape[1]
            visible = torch.ones(width, width, dtype=torch.bool, device=ids.device).tril()
            visible[:, :n] = True
            kwargs["attention_mask"] = torch.zeros(1, 1, width, width, dtype=self.model.dtype, device=ids.device)
            kwargs["attention_mask"].masked_fill_(~visible, torch.finfo(self.model.dtype).min)
        if self.spec.explicit_masks:
            return _mask(sliding_static.image_mask_reference(self.model, dict(kwargs, **types))[0])
        if self.forward_defines_no_mrope():
            kwargs["position_ids"] = self._defined_mrope(ids[0].tolist(), image)
        with torch.no_grad():
            out = self.model(**kwargs, **types, use_cache=False)
        return _mask(out.logits[0].float())

    def forward_defines_no_mrope(self) -> bool:
        """Whether this is an M-RoPE model (``get_rope_index``) whose forward, given no ``position_ids``, numbers the
        tokens one apart instead of by M-RoPE: 4.46's Qwen2-VL computes them in ``prepare_inputs_for_generation``
        only, so a plain forward of the row was no oracle there (every image scenario differed at step 0, by 0.5).
        Its reference is then given the positions of the definition (``video.block_positions``)."""
        if not hasattr(self, "_plain_positions"):
            sources = []
            if callable(getattr(self.model, "get_rope_index", None)):
                owners = [type(self.model), type(getattr(self.model, "model", None))]
                for c in (k for owner in owners for k in owner.__mro__):
                    if "forward" in vars(c) and c.__module__.startswith("transformers.models."):
                        try:
                            sources.append(inspect.getsource(vars(c)["forward"]))
                        except (OSError, TypeError):  # unreadable: taken as computing them (the model's own)
                            sources.append("get_rope_index")
            self._plain_positions = bool(sources) and not any("get_rope_index" in src for src in sources)
        return self._plain_positions

    def _defined_mrope(self, ids: list[int], image: dict) -> Any:
        """The row's M-RoPE positions as Qwen2-VL defines them: its image of t x h x w patches is t x h/m x w/m
        tokens (m: the vision tower's spatial merge)."""
        from .video import block_positions

        merge = int(getattr(self.model.config.vision_config, "spatial_merge_size", 1))
        t, h, w = (int(v) for v in image["image_grid_thw"][0])
        return block_positions(ids, {IMAGE: iter([(t, h // merge, w // merge, 1)])}).to(self.model.device)


def _mask(logits: Any) -> Any:
    logits = logits.clone()
    logits[..., _SPECIAL] = -1e4
    return logits


class _IdsByKeyword:
    """The model for ``generate_steps`` where ``generate()`` takes the pixels first: the ids go by keyword."""

    def __init__(self, model: Any):
        self.model = model

    def generate(self, input_ids: Any, **kwargs: Any) -> Any:
        return self.model.generate(input_ids=input_ids, **kwargs)


def _fresh(model: Any) -> None:
    """Drop a static cache that an earlier ``generate()`` kept on a submodule (4.57 Kosmos-2 generates through its
    text model, which keeps it there; ``differential.observe`` drops the top model's only): each run starts as a
    fresh call would, whatever ran before (a first run raised ValueError, every later one AttributeError)."""
    for module in list(model.modules()):
        vars(module).pop("_cache", None)


def _image_steps(s: ImageTextSubject, prompts: list[list[int]], images: list[dict], what: str,
                 **generate_kwargs: Any) -> dict:
    """``generate()`` of a left-padded batch of image prompts: every row's every step against the no-cache forward
    of that row alone (its prompt, its image, its generated tokens)."""
    _fresh(s.model)
    kwargs = s.batch(prompts, images)
    ids, mask = kwargs.pop("input_ids"), kwargs.pop("attention_mask")
    first = next(iter(inspect.signature(s.model.generate).parameters), "")
    # BLIP-2, InstructBLIP, Kosmos-2: generate(pixel_values, input_ids=...)
    model = _IdsByKeyword(s.model) if first == "pixel_values" else s.model
    run = generate_steps(model, ids, mask, max_new_tokens=5, suppress_tokens=_SPECIAL, **kwargs, **generate_kwargs)
    run = dataclasses.replace(run, step_logits=[_mask(logits.float()) for logits in run.step_logits])
    return check_rows_against_reference(
        s.model, prompts, run, what, eos_token_id=[],
        reference=lambda b, tokens: s.reference(prompts[b], images[b], tokens[len(prompts[b]):]))


@sweep.scenario("image-cached", kind=IMAGE_TEXT_KIND)
def image_cached(s: ImageTextSubject) -> dict:
    return _image_steps(s, s.prompts(6), [s.image(0)], "image-text, cached generate() vs no-cache forward")


@sweep.scenario("image-uncached", kind=IMAGE_TEXT_KIND)
def image_uncached(s: ImageTextSubject) -> dict:
    return _image_steps(s, s.prompts(6, seed=1), [s.image(1)], "image-text, generate(use_cache=False) vs no-cache "
                        "forward", use_cache=False)


@sweep.scenario("image-padded", needs=("padding",), kind=IMAGE_TEXT_KIND)
def image_padded(s: ImageTextSubject) -> dict:
    """Two prompts of different lengths with different images, left-padded, against each row alone."""
    return _image_steps(s, s.prompts(7, 3, seed=2), [s.image(2), s.image(3)], "image-text, left-padded batch of "
                        "two prompts with different images vs each row alone")


@sweep.scenario("image-padded-same-image", needs=("padding",), kind=IMAGE_TEXT_KIND)
def image_padded_same_image(s: ImageTextSubject) -> dict:
    return _image_steps(s, s.prompts(3, 8, seed=4), [s.image(4), s.image(4)], "image-text, left-padded batch of "
                        "two prompts with the same image vs each row alone")


@sweep.scenario("image-static-cache", needs=("padding",), kind=IMAGE_TEXT_KIND)
def image_static_cache(s: ImageTextSubject) -> dict:
    return _image_steps(s, s.prompts(5, 2, seed=5), [s.image(5), s.image(6)], "image-text, static cache, "
                        "left-padded batch", cache_implementation="static")


sweep.architecture_kind(IMAGE_TEXT_KIND, image_text_types, ImageTextSubject, QUICK_PER_KIND)
