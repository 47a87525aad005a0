"""``hf-genfix doctor --sweep``: the general oracles over every architecture of the installed release.

Architectures come in kinds (``KINDS``): decoder-only here; encoder-decoder and image-text in
``oracles.sweep.families``; the tiny remote-code repos in ``oracles.sweep.remote``. Each scenario belongs to one
kind (``scenario(..., kind=...)``) and runs on that kind's subjects only. What follows describes the decoder-only kind; the judging is the same for every kind.

The catalog (patches/) only knows the defects somebody found. The sweep looks for the next ones: for each
decoder-only model type this release can build tiny from its config, it runs the generation paths that have
broken before (``SCENARIOS``: cached against uncached, padded and unpadded batches, hand-written decode loops,
chunked prefill, sliding windows, assisted and prompt-lookup decoding, beam search, a static cache, a second turn)
against the no-cache reference, with the patches installed as the user has them. Each scenario gets a verdict:

- ``pass``: the output matches the oracle;
- ``skipped``: the scenario cannot run on this release (e.g. no ``prefill_chunk_size`` before 4.51);
- ``unsupported``: the model cannot do what the scenario asks, decided from the model itself (``Subject``): it
  keeps no attention KV cache, its forward takes no ``position_ids`` or ignores ``attention_mask`` (a padded
  scenario fails), or transformers refuses the call in words ("does not support", "cannot use");
- ``known``: a defect of the catalog: a manifest claims the scenario (its optional ``sweep`` key, below) and its
  patch is not installed here or leaves upstream's output as it is, or forcing a not-installed patch removes it;
- ``catalog-wrong``: a patch removes it, but the patch's ``affected`` range excludes this release (exit 1);
- ``worse``: upstream (every patch off, ``differential.differential``) passes where hf_genfix fails (exit 1);
- ``upstream-error``: transformers raises, the same exception type with every patch off, and no patch removes
  it: loud, never silently wrong; listed with the exception (a shape error of a static cache, say);
- ``unknown``: a defect nothing explains (exit 1): architecture, scenario, step, logit difference.

A manifest claims scenarios with ``sweep = ["scenario", "scenario/arch-glob", ...]`` (docs/writing-a-patch.md):
the failures its defect produces on releases inside its ``affected`` range, on every architecture or on the
model types the glob matches. New patches claim their scenarios there, without a change here.

With ``differential=True`` (``doctor --sweep --differential``) every scenario also runs without hf_genfix and the
pair is judged by ``differential.compare`` (identical / corrected / same-exception / ... / worse); with every
scenario (no ``scenarios`` chosen) the save -> reload -> compare scenarios of ``oracles.saving`` (whole saved
folders, byte for byte) are judged and counted with them.

The scenario oracles are the families' own (``oracles.decode``, ``oracles.sliding``, ``oracles.generation``);
only beam search, the multi-turn and the chunk-after-cache checks are written here.
"""

from __future__ import annotations

import contextlib
import fnmatch
import inspect
import sys
import time
import warnings
from typing import Any, Callable, Iterable, Iterator, Sequence

from ...verdicts import Word
from .. import decode, differential, sliding
from ..generation import (
    SUPPRESSED,
    check_rows_against_reference,
    generate_steps,
    left_pad,
    right_pad,
)
from ..outcome import DefectObserved, ProbeSkipped, earlier_stage, past_earlier_stages
from ..precision import cast, tolerance
from ..reference import forward_takes, reference_logits
from ..tiny import ROUNDING, calibrate, draw_unwritten, tiny_config

WINDOW = sliding.WINDOW
MAX_PARAMS = 2_000_000
FULL_SEARCHES = 2  # architectures per scenario on which every not-installed patch is forced to explain a failure
# Words in an exception that mean "this architecture does not do that" rather than "this is broken".
_UNSUPPORTED = differential.REFUSAL_WORDS

# Verdicts per scenario; the last three make the exit status 1.
PASS, SKIPPED, UNSUPPORTED, KNOWN = Word.PASS, Word.SKIPPED, Word.UNSUPPORTED, Word.KNOWN
CATALOG_WRONG, WORSE, UNKNOWN = Word.CATALOG_WRONG, Word.WORSE, Word.UNKNOWN
UNUSABLE = Word.UNUSABLE  # the architecture's tiny config does not suit it: every scenario crashes alike
# The oracle passes, but by more than float rounding (``tiny.ROUNDING`` on the calibrated models) and at most by its
# tolerance: neither clean nor a clear defect. It is run again in float64 (``second_look``): rounding shrinks there
# and is listed as settled with both figures, a defect keeps its size and is unknown; what neither settles is listed
# as suspect, never counted as rounding (exit status unchanged).
SUSPECT = Word.SUSPECT
LOUD = Word.LOUD  # transformers raises, the same without hf_genfix, and no patch removes it
# A silently wrong upstream path the sweep found and patches/open-findings.json records (what is known of it, where
# it was measured) while no patch fixes it yet: listed in every report with its record, never counted as passing,
# and not failing the sweep again and again for a defect already on file. Only upstream's failure can be open: a
# run that hf_genfix makes worse is still a failure.
OPEN = Word.OPEN
FAILING = (CATALOG_WRONG, WORSE, UNKNOWN)
MEANING = {
    PASS: "the output matches the oracle",
    SKIPPED: "the scenario cannot run on this release",
    UNSUPPORTED: "the model cannot do what the scenario asks (the reason says why); not a defect",
    KNOWN: "a defect in the catalog (the patch id named); not new",
    CATALOG_WRONG: "a patch removes it, but its affected range excludes this release: the catalog is wrong",
    WORSE: "upstream passes with every patch off, hf_genfix fails: a regression hf_genfix causes",
    UNKNOWN: "a defect no manifest explains: new",
    OPEN: "a silently wrong upstream path already on file in patches/open-findings.json, not patched yet (the "
          "record says what is known); not new, and not fixed: your outputs are upstream's, defect included",
    SUSPECT: "the oracle passes, but the output is off by more than float rounding (above the rounding threshold, "
             "at most the oracle's tolerance) and the same run in float64 did not settle it: listed for a look, not "
             "a verdict",
    UNUSABLE: "every scenario of the architecture crashes alike: its tiny config does not suit it",
    LOUD: "transformers raises (the same exception with every patch off) and no patch removes it: a loud "
          "upstream error, never a silently wrong answer; not a regression, listed with the exception",
}

Scenario = Callable[["Subject"], dict]
SCENARIOS: dict[str, Scenario] = {}

# ``doctor --sweep --quick``: a deterministic sample of the architectures (and of the combinations a scenario
# enumerates, through ``pick``) so that a sweep fits in a couple of minutes; the matrix run covers them all.
QUICK_ARCHS = 16
QUICK_FIRST: list[str] = []  # model types a scenario module needs in every quick sample (they are taken first)
_quick = False


def pick(items: Iterable[Any], k: int) -> list[Any]:
    """All of ``items`` on a full sweep; on a quick one, ``k`` of them spread evenly (the same ones every run)."""
    items = list(items)
    if not _quick or len(items) <= k:
        return items
    step = len(items) / k
    return [items[int(i * step)] for i in range(k)]


def scenario(name: str, needs: Sequence[str] = (), record_forward: bool = False,
             kind: str = "decoder-only") -> Callable[[Scenario], Scenario]:
    """Register a scenario. ``needs``: "kv" (it rewinds, chunks or pre-allocates an attention KV cache: not run on
    a model without one), "padding" (its batch is padded: a failure of a model that cannot take padding is
    ``unsupported``), "reorder" (beam search reorders the cache; no excuse: a recurrent state must be reordered
    too, and a release that cannot says so in words), "cache_position" (a caller states new tokens by it: a model whose own
    prepare_inputs_for_generation takes none is ``unsupported``), "continue" (it continues by hand a cache that a
    forward returned: a model whose forward returns a fixed-size cache with no room is ``unsupported``). ``record_forward``: the scenario calls the model
    by hand, so the differential compares every forward's logits (generate() outputs are always compared).
    ``kind``: the architecture kind (``KINDS``) whose subjects it runs on."""

    def register(func: Scenario) -> Scenario:
        func.kind = kind  # type: ignore[attr-defined]
        func.needs = tuple(needs)  # type: ignore[attr-defined]
        func.record_forward = record_forward  # type: ignore[attr-defined]
        SCENARIOS[name] = func
        return func

    return register


def kind_of(func: Scenario) -> str:
    return getattr(func, "kind", "decoder-only")


# -- the architectures ------------------------------------------------------------------------------------------
# Architecture kinds: name -> (the model types of this release it covers, the class that builds one as a subject,
# how many built ones a quick sweep takes). Decoder-only is this module's; oracles.sweep.families adds
# encoder-decoder and image-text. A model type is swept as the last kind registered that lists it (a family's kind
# is more specific than decoder-only, whose list also holds composite configs it cannot build).
KINDS: dict[str, tuple[Callable[[], list[str]], Callable[[str], Any], int]] = {}


def architecture_kind(name: str, types: Callable[[], list[str]], subject: Callable[[str], Any],
                      quick: int) -> None:
    KINDS[name] = (types, subject, quick)


def kinds_of(types: Iterable[str] | None = None) -> dict[str, str]:
    """{model type: kind} for ``types`` (every kind's types by default); a type no kind lists is decoder-only."""
    found: dict[str, str] = {}
    for name, (listed, _, _) in KINDS.items():
        found.update(dict.fromkeys(listed(), name))
    if types is None:
        return dict(sorted(found.items()))
    return {t: found.get(t, "decoder-only") for t in types}


def decoder_only_types() -> list[str]:
    """Model types with a causal-LM head that are neither masked LMs nor encoder-decoders."""
    from transformers.models.auto import modeling_auto as auto

    from ..tiny import layouts_of

    causal = set(auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    others = set(getattr(auto, "MODEL_FOR_MASKED_LM_MAPPING_NAMES", {}))
    others |= set(getattr(auto, "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", {}))
    return layouts_of(sorted(causal - others))


class Subject:
    """One architecture built tiny: the target model, what it can do (read from the model, not from a list),
    and on demand a draft of the same type (another seed) and a 1-layer copy (same seed) as assistants."""

    kind = "decoder-only"
    config_overrides: dict[str, Any] = {}  # a kind's own config switches (bert_decoders: is_decoder=True)

    def __init__(self, model_type: str):
        self.model_type = model_type
        self.overrides = dict(_sliding_overrides(model_type), **_ssm_overrides(model_type))
        self.sliding = bool(self.overrides)  # a kind's own switches (below) make no model sliding
        self.overrides.update(self.config_overrides)
        self.model = build(model_type, seed=0, **self.overrides)
        self._draft: Any = None
        self._copy: Any = None
        vocab = self.model.config.get_text_config().vocab_size if hasattr(self.model.config, "get_text_config") \
            else self.model.config.vocab_size
        self.vocab = min(int(vocab), 128)
        self.kv_cache = self._check_causal_and_cache()
        self.takes_position_ids = "position_ids" in inspect.signature(self.model.forward).parameters
        self.ignores_mask = self._ignores_mask()
        self._padding: str | None = None

    def _check_causal_and_cache(self) -> bool:
        """Skip what is not a causal LM here (an encoder used as a decoder attends to later tokens); say whether
        the model keeps an attention KV cache (recurrent models keep a state that cannot be rewound)."""
        import torch

        from ...helpers.decode import cache_from_outputs

        (row,) = self.rows(8, seed=99)
        if not self._first_position_causal(self.model, row):
            # The first position sees later tokens: bidirectional attention, an encoder used as a decoder -- where
            # the config's own switch (is_decoder=True) makes it causal (the bert-decoder kind builds such types with
            # it: BertGeneration since session 40, read from its class). Where it does not, the model is a causal LM
            # whose forward mixes positions: a defect the causal-prefix scenario names, never a reason to leave the
            # model out (Llama-4's MoE on 4.54-4.56 scales each token's experts by another
            # token's router scores; skipped here as "an encoder", it was never swept on those releases).
            try:
                decoder = build(self.model_type, seed=0, **dict(self.overrides, is_decoder=True))
            except ProbeSkipped:
                decoder = None
            if decoder is not None and getattr(decoder.config, "is_decoder", False) \
                    and self._first_position_causal(decoder, row):
                raise ProbeSkipped("not causal with its default config (an encoder used as a decoder; "
                                   "is_decoder=True makes it causal)")
        # A first position that sees nothing later but later ones that do is a causal LM with a defect (a scan that
        # carries its state between chunks wrongly: Mamba-2 before 4.48), not an encoder: it is built, and the
        # causal-prefix scenario names it. Until session 22 it was skipped here as an encoder, silently.
        ids = torch.tensor([row], device=self.model.device)
        with torch.no_grad():
            # use_cache only where the forward names it: OpenAI-GPT's before 4.48.3 does not (it keeps no cache,
            # and generate() passes it nothing), and the sweep left it out there as "cannot build"
            flag = {"use_cache": True} if forward_takes(self.model, "use_cache") else {}
            out = self.model(input_ids=ids, attention_mask=torch.ones_like(ids), **flag)
        cache = cache_from_outputs(out)
        self.fixed_cache = _no_room(cache, len(row))
        try:
            return cache is not None and int(cache.get_seq_length()) == len(row)
        except Exception:  # noqa: BLE001 - legacy tuples, recurrent states: no rewindable KV cache
            return isinstance(cache, tuple)

    @staticmethod
    def _first_position_causal(model: Any, row: list[int]) -> bool:
        """Whether the first position's logits are the same in a forward of 8 tokens and of its first 5."""
        full = reference_logits(model, row)
        prefix = reference_logits(model, row[:5])
        return float((full[:1] - prefix[:1]).abs().max()) <= tolerance()

    def _ignores_mask(self) -> bool:
        """Whether masking out the first tokens leaves the last logits bitwise unchanged (RWKV says so in a log
        line, once per process; the logits say it every time). Read from a forward without a cache where the
        forward takes ``use_cache``: a model whose cached path alone drops the mask has a defect there, not a
        contract (BertGeneration before 4.47 read as "ignores the mask" from its default, cached, forward, and its
        left-padded scenario was excused as unsupported until session 40: model-bert-generation-cached-mask)."""
        import torch

        (row,) = self.rows(6, seed=98)
        ids = torch.tensor([row])
        masked = torch.ones_like(ids)
        masked[0, :2] = 0
        flag = {"use_cache": False} if forward_takes(self.model, "use_cache") else {}
        with torch.no_grad():
            plain = self.model(input_ids=ids, attention_mask=torch.ones_like(ids), **flag).logits[0, -1]
            hidden = self.model(input_ids=ids, attention_mask=masked, **flag).logits[0, -1]
        return bool(torch.equal(plain, hidden))

    def padding_problem(self) -> str:
        """Why the model cannot take a left-padded row ("" when it can): one forward of a row behind two pads,
        with the mask and, where its forward takes them, position ids that skip the pads, must give the unpadded
        row's logits. Models without position_ids pass when the mask alone places the tokens (ALiBi, recurrent)
        and fail when their positions count the pads (TrOCR's learned positions). Position ids are tried in both
        numberings a forward may expect: from 0, and fairseq's from ``padding_idx + 1`` with the pads at
        ``padding_idx`` (RoBERTa-style models number themselves so; given positions from 0 they differ, and until
        session 39 that read as "cannot take padding": XLM-RoBERTa-XL's override before 4.48 was excused so)."""
        import torch

        if self._padding is None:
            (row,) = self.rows(6, seed=97)
            ids = torch.tensor([[0, 0] + row])
            mask = torch.tensor([[0, 0] + [1] * len(row)])
            counted = (mask.cumsum(-1) - 1).clamp(min=0)
            pad = getattr(self.model.config, "pad_token_id", None)
            numberings = [counted]
            if self.takes_position_ids and type(pad) is int and pad >= 0:
                numberings.append(torch.where(mask == 1, counted + pad + 1, torch.full_like(counted, pad)))
            reference = reference_logits(self.model, row)
            diffs, broken = [], False
            for positions in numberings if self.takes_position_ids else [None]:
                extra = {} if positions is None else {"position_ids": positions}
                with torch.no_grad():
                    logits = self.model(input_ids=ids, attention_mask=mask, **extra).logits[0, 2:]
                diffs.append(float((logits.float() - reference).abs().max()))
                # NaN or inf where the unpadded row is finite is no contract of the model's: it is a defect the
                # padded scenarios must report (Gemma-3n on 4.53.0: a pad's zero embedding divided by its zero
                # magnitude; read as "cannot take padding", its left-padded scenarios were called unsupported)
                broken = broken or (not bool(torch.isfinite(logits).all()) and bool(torch.isfinite(reference).all()))
                if diffs[-1] <= tolerance():
                    break
            diff = min(diffs)
            self._padding = "" if diff <= tolerance() or broken else (
                f"a left-padded forward differs from the unpadded row by {diff:.3g} (its forward takes "
                f"{'position_ids' if self.takes_position_ids else 'no position_ids'}): it cannot take padding")
            # A forward that places a padded row right when given positions is a model that takes padding. Where
            # its own prepare_inputs_for_generation gives generate() no positions (CTRL and OpenAI-GPT before 5.2),
            # the pads count as positions: a defect of that method (upstream dropped both overrides), which the
            # padded scenarios report. Until session 32 it excused them as "cannot take padding in generate()".
        return self._padding

    def _own_prepare_inputs(self) -> Any:
        """The model's own prepare_inputs_for_generation (a transformers.models class defines it), or None for the
        generic one of GenerationMixin."""
        owner = next((c for c in type(self.model).__mro__ if "prepare_inputs_for_generation" in vars(c)), None)
        if owner is None or not owner.__module__.startswith("transformers.models."):
            return None
        return vars(owner)["prepare_inputs_for_generation"]

    def _takes_cache_position(self) -> bool:
        """False where the model's own prepare_inputs_for_generation names no cache_position and, given one for a
        10-token chunk after a cached 3-token prefix, still cuts the chunk (4.x CTRL slices by the cache length)."""
        import torch

        from ...helpers.decode import cache_from_outputs

        own = self._own_prepare_inputs()
        if own is None or "cache_position" in inspect.signature(own).parameters:
            return True
        ids = torch.tensor([self.rows(13, seed=96)[0]])
        try:
            with torch.no_grad():
                cache = cache_from_outputs(self.model(ids[:, :3], use_cache=True))
        except Exception:  # noqa: BLE001 - unsure: not the reason
            return True
        # 4.54-4.55 CTRL: the forward returns a legacy tuple that the model's own prepare_inputs reads through the
        # Cache API (AttributeError: get_seq_length). generate() wraps such a tuple in a DynamicCache, as its
        # deprecation warning tells a caller to: asked again with the cache so wrapped, the model says how it cuts.
        for given in (cache, _as_dynamic_cache(cache)):
            if given is None:
                continue
            try:
                with torch.no_grad():
                    inputs = self.model.prepare_inputs_for_generation(ids[:, 3:], past_key_values=given,
                                                                      use_cache=True,
                                                                      cache_position=torch.arange(3, 13))
                break
            except Exception:  # noqa: BLE001 - unsure: not the reason
                continue
        else:
            return True
        fed = inputs.get("input_ids")
        return fed is None or fed.shape[-1] == 10

    def lacks(self, needs: Sequence[str]) -> str:
        """Why the model cannot do what a scenario with ``needs`` asks ("" when it can)."""
        if "kv" in needs and not self.kv_cache:
            return "no attention KV cache in this architecture (a recurrent state cannot be rewound or chunked)"
        if "continue" in needs and self.fixed_cache:
            return ("its forward returns a fixed-size cache with no room past the call's tokens (4.x Gemma-2: a "
                    "HybridCache of max_cache_len = the tokens given): a cache a forward returned cannot be "
                    "continued by hand; generate() allocates one with room")
        if "padding" in needs and self.ignores_mask:
            return "the model ignores attention_mask (masking tokens out leaves its logits unchanged)"
        if "padding" in needs:
            return self.padding_problem()
        if "cache_position" in needs and not self._takes_cache_position():
            return ("its own prepare_inputs_for_generation takes no cache_position (it slices the ids by the cache "
                    "length: the full-ids contract of generate()), so a caller cannot say that a chunk is new")
        # "reorder" excuses nothing: a recurrent state is the model's, and beam search must reorder it as it does
        # keys and values. Where a release cannot, it says so (5.24: "RwkvForCausalLM cannot use beam search with
        # a cache currently"), which is judged as a refusal in words; older releases go on silently, a finding.
        return ""

    @property
    def draft(self) -> Any:
        if self._draft is None:
            self._draft = build(self.model_type, seed=1, **self.overrides)
        return self._draft

    @property
    def small_copy(self) -> Any:
        """A 1-layer model of the same type and seed (its first layer and embeddings are the target's): an
        assistant whose drafts are partly accepted. The target itself where one layer cannot be built."""
        if self._copy is None:
            try:
                self._copy = build(self.model_type, seed=0, **dict(self.overrides, num_hidden_layers=1))
            except Exception:  # noqa: BLE001 - architectures that need 2 layers (a hybrid's two kinds)
                self._copy = self.model
        return self._copy

    def rows(self, *lengths: int, seed: int = 0) -> list[list[int]]:
        import torch

        gen = torch.Generator().manual_seed(seed)
        return [torch.randint(3, self.vocab, (n,), generator=gen, device="cpu").tolist() for n in lengths]


def _no_room(cache: Any, tokens: int) -> bool:
    """Whether a cache a forward returned is pre-allocated to exactly the tokens it holds (not a dynamic one)."""
    from transformers.cache_utils import DynamicCache

    if cache is None or isinstance(cache, (DynamicCache, tuple)) or not hasattr(cache, "get_max_cache_shape"):
        return False
    try:
        size = cache.get_max_cache_shape()
    except Exception:  # noqa: BLE001 - unsure: not the reason
        return False
    return isinstance(size, int) and 0 < size <= tokens


def _sliding_overrides(model_type: str) -> dict[str, Any]:
    """A window of 8 for architectures whose config has one (so a few dozen tokens go well past it)."""
    config = tiny_config(model_type)
    if getattr(config, "sliding_window", None) is None and not hasattr(type(config)(), "sliding_window"):
        return {}
    out: dict[str, Any] = {"sliding_window": WINDOW}
    if hasattr(config, "use_sliding_window"):
        out.update(use_sliding_window=True, max_window_layers=1)
    return out


# State-space (Mamba-2) mixers of hybrid models keep their full-size defaults under the tiny text sizes (Falcon-H1:
# 128 heads, state 256, chunks of 256): without the optional kernels their reference scan then takes seconds per
# step, a third of the whole sweep. Small values where the config has them (heads x head size = inner size).
# ``chunk_size`` (Mamba-2, Zamba2, xLSTM: 256 by default) at 4, so that every prompt of the scenarios spans several
# chunks: a knob that gates a code path (issue 36 section 2; Zamba2's scan between chunks was wrong on 4.49-5.14 and
# no scenario of the main model crossed a chunk).
_SSM_SIZES = {"mamba_n_heads": 8, "mamba_d_head": 8, "mamba_d_ssm": 64, "mamba_d_state": 16, "mamba_chunk_size": 16,
              "chunk_size": 4}


def _ssm_overrides(model_type: str) -> dict[str, Any]:
    config = tiny_config(model_type)
    out = {k: v for k, v in _SSM_SIZES.items()
           if isinstance(getattr(config, k, None), int) and getattr(config, k) > v}
    if "mamba_d_ssm" in out or "mamba_n_heads" in out:
        out.update({k: _SSM_SIZES[k] for k in ("mamba_n_heads", "mamba_d_head", "mamba_d_ssm") if hasattr(config, k)})
    if getattr(config, "use_mem_rope", None) is False:
        # Zamba2 on 5.0-5.3 builds no model without its shared attention's rotary embedding ('Zamba2Model' object
        # has no attribute 'rotary_emb'), so the sweep met no Zamba2 there and missed model-zamba2-chunk-scan (the
        # recall on 5.2.0); the probe and the program build theirs the same way.
        out["use_mem_rope"] = True
    blocks, layers = getattr(config, "block_types", None), getattr(config, "num_hidden_layers", None)
    if isinstance(blocks, (list, tuple)) and "attention" in blocks and isinstance(layers, int) \
            and "attention" not in [blocks[i % len(blocks)] for i in range(layers)]:
        # RecurrentGemma's blocks cycle (recurrent, recurrent, attention): at the tiny depth of 2 it has no attention
        # block, which 5.12+ cannot build ("'attention' is not in list"), so the sweep met no RecurrentGemma there
        # and missed decoding-beam-recurrent-gemma (the recall on 5.12.0 and 5.24.0). Deep enough for one.
        out["num_hidden_layers"] = list(blocks).index("attention") + 1
    return out


# Mixture-of-experts and latent-attention sizes for a model the tiny text sizes leave too large (Qwen2-MoE: 60
# experts and a shared expert of 5632, 17.3M parameters; DeepSeek-V2/V3: query and key-value ranks of 1536 and 512,
# 3.6M): the sweep built neither and missed sliding-window-full-cache-qwen2-moe on 4.57.6 (issue 36's recall).
# Applied only where the model would otherwise not be built, so that the models the sweep already builds keep their
# weights. Two of eight experts per token, so the routing still chooses; DeepSeek-V3's first MoE layer moved to the
# second of the two layers, so that one is built.
_MOE_SIZES = {"num_experts": 8, "num_local_experts": 8, "n_routed_experts": 8, "moe_num_experts": 8,
              "num_experts_per_tok": 2, "moe_topk": 2, "moe_intermediate_size": 16,
              "shared_expert_intermediate_size": 16, "expert_intermediate_size": 16, "moe_ffn_hidden_size": 16,
              "first_k_dense_replace": 1, "q_lora_rank": 16, "kv_lora_rank": 16, "qk_rope_head_dim": 8,
              "qk_nope_head_dim": 8, "v_head_dim": 8}


def _moe_overrides(config: Any, overrides: dict[str, Any]) -> dict[str, Any]:
    """The ``_MOE_SIZES`` that shrink ``config`` (integers larger than ours, not set by ``overrides``)."""
    return {k: v for k, v in _MOE_SIZES.items() if k not in overrides
            and isinstance(getattr(config, k, None), int) and not isinstance(getattr(config, k), bool)
            and getattr(config, k) > v}


def build(model_type: str, seed: int = 0, **overrides: Any) -> Any:
    """A tiny causal LM of ``model_type``; ``ProbeSkipped`` when the release cannot build one that is tiny."""
    import torch
    from transformers import AutoModelForCausalLM

    config = tiny_config(model_type, **overrides)
    if _composite(config):
        raise ProbeSkipped("composite config (vision/audio parts): not built tiny from a text config")

    def count(config: Any, device: str = "meta") -> int:
        try:
            with torch.device(device):
                return sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
        except ProbeSkipped:
            raise
        except NotImplementedError as exc:
            # An init that reads a value of its parameters (Apertus's xIELU on 4.56-4.57: .item()) cannot run on
            # the meta device, which only counts: counted on the CPU (a tiny config, or the size check below
            # refuses it). Until session 40 such a type was "not built tiny".
            if device == "meta" and "meta tensor" in str(exc):
                return count(config, "cpu")
            raise ProbeSkipped(f"cannot build from a tiny config: NotImplementedError: {_short(exc)}") from exc
        except ValueError as exc:
            if "attn_implementation" in overrides or getattr(config, "_attn_implementation", "eager") == "eager" \
                    or "attention implementation" not in str(exc):
                raise ProbeSkipped(f"cannot build from a tiny config: ValueError: {_short(exc)}") from exc
            # A sweep run with another kernel (doctor --attn sdpa) and a model that lacks it: eager, as
            # transformers itself falls back when the caller names no kernel.
            config._attn_implementation = "eager"
            return count(config)
        except Exception as exc:  # noqa: BLE001 - a config the tiny defaults do not satisfy
            raise ProbeSkipped(f"cannot build from a tiny config: {type(exc).__name__}: {_short(exc)}") from exc

    params = count(config)
    smaller = _moe_overrides(config, overrides) if params > MAX_PARAMS else {}
    if smaller:
        config = tiny_config(model_type, **dict(overrides, **smaller))
        params = count(config)
    if params > MAX_PARAMS:
        raise ProbeSkipped(f"the tiny config still gives {params / 1e6:.1f}M parameters")
    torch.manual_seed(seed)
    with torch.no_grad(), torch.device("cpu"):  # CUDA's generator would draw other weights for the seed
        model = AutoModelForCausalLM.from_config(config)
    draw_unwritten(model, seed)  # what the release's init leaves as memory found (Llama-4's experts on 4.51)
    return cast(calibrate(model.float()))


def _composite(config: Any) -> bool:
    """Whether the config holds another model's config (a vision tower, an audio encoder, an ``AutoConfig``). A config
    class no model is registered under is a part of this model's own configuration (FSMT's ``decoder`` on 4.x: its
    vocabulary and start token, model_type "fsmt_decoder"); taking it for a second model left FSMT out of the 4.x
    sweeps (recall missed model-fsmt-uncached-mask on 4.46.3, and FSMT's cached positions were never measured there)."""
    from transformers import CONFIG_MAPPING, PretrainedConfig

    def second_model(part: Any) -> bool:
        # A config class with no model type of its own, or one no model is registered under, is a part of this
        # model's configuration: MPT's and DBRX's attn_config / ffn_config (model_type ""), taken for a second
        # model, left both text models out of every sweep until session 32.
        cls = part if isinstance(part, type) else type(part)
        kind = getattr(cls, "model_type", "")
        return not (issubclass(cls, PretrainedConfig) and (not kind or kind not in CONFIG_MAPPING))

    if any(second_model(part) for part in (getattr(config, "sub_configs", None) or {}).values()):
        return True
    return any(isinstance(v, PretrainedConfig) and second_model(v) for v in vars(config).values())


architecture_kind("decoder-only", decoder_only_types, Subject, QUICK_ARCHS)


# -- the scenarios ----------------------------------------------------------------------------------------------
# The oracles are the shared ones: generation.check_rows_against_reference (every step against the no-cache
# reference), sliding.check_past_window / check_same_as_greedy (runs that go the whole length; tokens equal to
# plain greedy), decode.check_manual_loop (a hand-written loop through prepare_inputs_for_generation).


@scenario("cached")
def cached(s: Subject) -> dict:
    rows = s.rows(9)
    run = generate_steps(s.model, *left_pad(rows), max_new_tokens=6, use_cache=True)
    return check_rows_against_reference(s.model, rows, run, "cached generate() vs no-cache forward")


@scenario("left-padded", needs=("padding",))
def left_padded(s: Subject) -> dict:
    rows = s.rows(7, 3, 10)
    # The padding id (0) is never generated: a row that generates it is ambiguous for every model that finds its
    # pads by value (fairseq positions: Speech2Text2 on 4.46 generates it at its first step under the calibrated
    # weights, and its no-cache reference then skips that token as a pad, by definition), so the oracle would be.
    run = generate_steps(s.model, *left_pad(rows), max_new_tokens=6, suppress_tokens=[0])
    for logits in run.step_logits:  # what generate() chose among: the same mask on both sides of the oracle
        logits[:, 0] = SUPPRESSED

    def reference(b: int, tokens: list[int]) -> Any:
        from ..reference import reference_logits

        ref = reference_logits(s.model, tokens).clone()
        ref[:, 0] = SUPPRESSED
        return ref

    return check_rows_against_reference(s.model, rows, run, "left-padded batch vs each row alone",
                                        reference=reference)


@scenario("unpadded-batch")
def unpadded_batch(s: Subject) -> dict:
    """Two rows of the same length, no padding: rows must not mix (RWKV's one-token step broadcasts them)."""
    import torch

    rows = s.rows(8, 8, seed=3)
    ids = torch.tensor(rows)
    run = generate_steps(s.model, ids, torch.ones_like(ids), max_new_tokens=6)
    return check_rows_against_reference(s.model, rows, run, "unpadded batch of 2 vs each row alone")


@scenario("manual-loop", needs=("kv", "padding", "continue"), record_forward=True)
def manual_loop(s: Subject) -> dict:
    """Greedy decoding by hand: ``prepare_inputs_for_generation`` given the full ids, the cache and the mask."""
    return decode.check_manual_loop(s.model)


@scenario("chunk-after-cache", needs=("kv", "cache_position", "continue"), record_forward=True)
def chunk_after_cache(s: Subject) -> dict:
    """A cached 3-token prefix (a system prompt), then a 10-token chunk through ``prepare_inputs_for_generation``
    with the caller's explicit ``cache_position``: all 10 tokens are new and every one's logits must match."""
    return decode.check_chunk_after_cache(s.model)


@scenario("multi-turn", needs=("padding",))
def multi_turn(s: Subject) -> dict:
    """A right-padded first turn, then the usual continuation ``generate(out, attention_mask=cat([mask, ones]))``:
    each row must get, over both turns, what it gets alone."""
    import torch

    rows = s.rows(7, 3, 10, 5, seed=7)
    ids, mask = right_pad(rows)
    stop = dict(pad_token_id=0, eos_token_id=None)
    first = generate_steps(s.model, ids, mask, max_new_tokens=3, **stop)
    with earlier_stage():
        check_rows_against_reference(s.model, rows, first, "multi-turn: first turn on right-padded prompts",
                                     eos_token_id=[])
    grown = torch.cat([mask, mask.new_ones((mask.shape[0], first.sequences.shape[1] - mask.shape[1]))], dim=1)
    second = generate_steps(s.model, first.sequences, grown, max_new_tokens=4, **stop)
    so_far = [list(row) + first.new_tokens(b) for b, row in enumerate(rows)]
    return check_rows_against_reference(s.model, so_far, second, "multi-turn: second turn, generate(out, "
                                        "attention_mask=cat([mask, ones]))", eos_token_id=[])


@scenario("past-window", needs=("padding",))
def past_window(s: Subject) -> dict:
    if not s.sliding:
        raise ProbeSkipped("no sliding window in this architecture")
    return sliding.check_past_window(s.model, s.rows(12, 5), 3 * WINDOW, f"generation past a window of {WINDOW}")


@scenario("assisted", needs=("kv",))
def assisted(s: Subject) -> dict:
    (row,) = s.rows(2 * WINDOW if s.sliding else 8)
    return sliding.check_same_as_greedy(s.model, row, 2 * WINDOW, "assisted decoding, 5-token drafts",
                                        suppress_pad=True, **sliding.drafting(s.draft, 5))


@scenario("assisted-4-tokens", needs=("kv",))
def assisted_4_tokens(s: Subject) -> dict:
    """4-token drafts from a 1-layer copy, some accepted and some not: the drafter's cache is cropped back every
    round (5.15.0-5.15.1 cropped it to the wrong length and crashed from 4 tokens on)."""
    (row,) = s.rows(13, seed=4)
    # 8 new tokens: 5.15.0 crashes on llama at 6, on gpt2 at 8 (a draft that is the model itself passes there).
    return sliding.check_same_as_greedy(s.model, row, 8, "assisted decoding, 4-token drafts from a 1-layer copy",
                                        suppress_pad=True, **sliding.drafting(s.small_copy, 4))


@scenario("assistant-drafting", needs=("kv",))
def assistant_drafting(s: Subject) -> dict:
    """Drafting with the architecture's own kind of assistant, which reads the target's hidden states and keys
    and values rather than running a cache of its own (Gemma-4's multi-token-prediction assistant, 5.12+):
    by definition plain greedy's tokens. 5.18.0-5.19.0 raise TypeError on every such call (drafting-mtp-init);
    ``assisted`` drafts with a model of the same type, which takes the generic path and never met it."""
    if not type(s.model).__name__.startswith("Gemma4"):
        # generate() also lets a Gemma-3n target pick that path, but Gemma-3n's outputs carry no shared keys and
        # values: upstream's own ValueError on every release, no equivalence to check.
        raise ProbeSkipped("no assistant of its own kind (only Gemma-4 targets have one)")
    drafter = sliding.gemma4_drafter(s.model, window=WINDOW)
    (row,) = s.rows(13, seed=4)
    return sliding.check_same_as_greedy(s.model, row, 8, "drafting by a Gemma-4 assistant, 3-token drafts",
                                        suppress_pad=True, **sliding.drafting(drafter, 3))


@scenario("prompt-lookup", needs=("kv",))
def prompt_lookup(s: Subject) -> dict:
    (head,) = s.rows(6)
    row = head * (3 if s.sliding else 2)  # repeated n-grams give the lookup something to propose
    return sliding.check_same_as_greedy(s.model, row, 2 * WINDOW, "prompt-lookup decoding",
                                        suppress_pad=True, prompt_lookup_num_tokens=3)


@scenario("prompt-lookup-plain", needs=("kv",))
def prompt_lookup_plain(s: Subject) -> dict:
    """Prompt-lookup decoding as a user calls it, with no eos (``eos_token_id=None``) and a budget of new tokens
    that is not a multiple of the candidates (5 new, 3 per lookup): by definition exactly plain greedy's tokens, as
    many as asked. ``prompt-lookup`` gives both runs an eos greedy never produces and 16 new tokens."""
    import torch

    (head,) = s.rows(6, seed=8)
    row = head * 3  # repeated n-grams give the lookup something to propose
    ids = torch.tensor([row], device=s.model.device)
    common = dict(max_new_tokens=5, do_sample=False, eos_token_id=None, pad_token_id=0,
                  attention_mask=torch.ones_like(ids))
    with torch.no_grad():
        greedy = s.model.generate(ids, **common)[0, len(row):].tolist()
        lookup = s.model.generate(ids, prompt_lookup_num_tokens=3, **common)[0, len(row):].tolist()
    if lookup != greedy and not _tie(s.model, row, lookup, greedy):
        raise DefectObserved(f"prompt lookup (eos_token_id=None, 5 new tokens): {lookup} != plain greedy {greedy}",
                             step=_first_diff(lookup, greedy))
    return {"tokens": len(lookup)}


def finite_beams(model: Any, ids: Any, mask: Any, runs: dict[str, Any]) -> None:
    """Raise where the model's no-cache forward of a beam search's returned sequences is NaN. Cached and uncached
    beams can agree and both be wrong: a NaN logit makes a NaN beam score, which torch.topk ranks above every number,
    so the NaN beam wins in both (Gemma-3n on 4.53.0: a beam that generates the pad token turns NaN). A
    log-probability is never NaN: a defect, whatever the two runs say. Called after the generate() calls (a forward
    between them could move a model that keeps its state in its modules); the forward is not a generate() call, so
    the differential's recording is unchanged. A model whose forward cannot take the sequences after generate()
    (4.53's RecurrentGemma: its module state sized by the beams) is not checked."""
    import torch

    for name, out in runs.items():
        full = torch.ones_like(out) if mask is None else torch.cat(
            [mask.to(out.device), torch.ones_like(out[:, mask.shape[1]:])], dim=1)
        try:
            with torch.no_grad():
                logits = model(input_ids=out, attention_mask=full, use_cache=False).logits
        except Exception:  # noqa: BLE001 - the check is an extra: a forward that cannot run checks nothing
            return
        nan = torch.isnan(logits.float()).any(dim=-1) & full.bool()
        if bool(nan.any()):
            row, position = (int(x) for x in nan.nonzero()[0])
            raise DefectObserved(f"beam search ({name}): the model's forward of row {row}'s beam is NaN from position "
                                 f"{position} (its beams were ranked by NaN scores)", row=row,
                                 step=max(position - ids.shape[1], 0))


@scenario("beam", needs=("reorder",))
def beam(s: Subject) -> dict:
    import torch

    rows = s.rows(8)
    ids, mask = left_pad(rows)
    common = dict(num_beams=3, max_new_tokens=6, do_sample=False, attention_mask=mask, early_stopping=True)
    with torch.no_grad():
        cached_out = s.model.generate(ids, use_cache=True, **common)
        plain = s.model.generate(ids, use_cache=False, **common)
    finite_beams(s.model, ids, mask, {"cached": cached_out, "uncached": plain})
    a, b = cached_out[0, ids.shape[1]:].tolist(), plain[0, ids.shape[1]:].tolist()
    if a != b and not _tie(s.model, rows[0], a, b):
        raise DefectObserved(f"beam search: cached {a} != uncached {b}", step=_first_diff(a, b))
    return {"tokens": len(a)}


def _chunking() -> None:
    from transformers import GenerationConfig

    if not hasattr(GenerationConfig(), "prefill_chunk_size"):
        raise ProbeSkipped("generate() has no prefill_chunk_size on this release")


@scenario("chunked-prefill", needs=("kv",))
def chunked_prefill(s: Subject) -> dict:
    _chunking()
    return sliding.check_past_window(s.model, s.rows(2 * WINDOW + 3), 6, "chunked prefill (chunks of 5)",
                                     prefill_chunk_size=5)


@scenario("left-padded-chunked-prefill", needs=("kv", "padding"))
def left_padded_chunked_prefill(s: Subject) -> dict:
    """Rows of 13, 5 and 9 tokens, left-padded, prefilled in chunks of 4 (4.51-4.57 took the chunks' positions
    from cache_position, ignoring the padding)."""
    _chunking()
    return sliding.check_past_window(s.model, s.rows(13, 5, 9, seed=6), 5,
                                     "left-padded batch, chunked prefill (chunks of 4)", prefill_chunk_size=4)


@scenario("static-cache", needs=("kv",))
def static_cache(s: Subject) -> dict:
    return sliding.check_past_window(s.model, s.rows(10), 6, "static cache", cache_implementation="static")


def _first_diff(a: Sequence[int], b: Sequence[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _tie(model: Any, prompt: list[int], a: list[int], b: list[int]) -> bool:
    """Two continuations that part where the reference scores both tokens within ``sliding.TIE`` (a numerical
    tie)."""
    gap = sliding.tie_gap(model, prompt, a, b, _first_diff(a, b))
    return gap is not None and gap < sliding.TIE


# -- running and judging ----------------------------------------------------------------------------------------
def _short(exc: BaseException, limit: int = 160) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return text[:limit]


def _name(func: Scenario) -> str:
    return next((k for k, v in SCENARIOS.items() if v is func), getattr(func, "__name__", "?"))


def observe(func: Scenario, subject: Subject) -> differential.Observation:
    """One run of a scenario with the patches as they are now, recording the model's outputs."""
    return differential.observe(func, subject, (subject.model,), getattr(func, "record_forward", False))


def attempt(func: Scenario, subject: Subject) -> tuple[dict[str, Any], differential.Observation | None]:
    """Run one scenario: ({"outcome": pass|defect|crash|skipped|unsupported, ...figures}, the observation), or
    not at all where the model lacks the KV cache the scenario needs or the scenario declines it (a function
    attribute ``declines(subject) -> reason``, "" when it runs) (observation None)."""
    lacking = subject.lacks(tuple(n for n in getattr(func, "needs", ()) if n == "kv"))
    lacking = lacking or getattr(func, "declines", lambda _subject: "")(subject)  # the scenario's own "cannot"
    if lacking:
        return {"outcome": UNSUPPORTED, "message": lacking, "seconds": 0.0, "not_run": True}, None
    obs = observe(func, subject)
    return _as_dict(obs), obs


def _as_dict(obs: differential.Observation) -> dict[str, Any]:
    outcome = {differential.PASS: PASS, differential.WRONG: "defect", differential.SKIPPED: SKIPPED}.get(
        obs.outcome, "crash")
    out: dict[str, Any] = {"outcome": outcome, **obs.figures}
    if obs.outcome == differential.RAISED:
        if any(word in obs.message.lower() for word in _UNSUPPORTED):
            out.update(outcome=UNSUPPORTED, message=f"transformers refuses it: {obs.message}")
        else:
            out.update(error=obs.error, message=obs.message + (f" (at {obs.where})" if obs.where else ""))
            if obs.caught:
                out["outcome"] = "defect"
    elif obs.message:
        out["message"] = obs.message
    out["seconds"] = obs.seconds
    return out


def _defines(manifest: Any, error: str) -> bool:
    """Whether the fix of ``manifest`` defines (or re-exports) the exception class named ``error``."""
    from ... import catalog

    try:
        found = getattr(catalog.fix(manifest.id), error, None)
    except Exception:  # noqa: BLE001 - a fix that does not import here defines nothing we could name
        return False
    return isinstance(found, type) and issubclass(found, BaseException)


def _claims(registry: Any, name: str, model_type: str, version: str | None) -> list[Any]:
    """The manifests whose ``sweep`` key claims this scenario on this model type, on a release in their range."""
    from ..._registry import in_range

    found = []
    for manifest in registry.manifests():
        for claim in getattr(manifest, "sweep", ()):
            scen, _, glob = claim.partition("/")
            if scen == name and fnmatch.fnmatchcase(model_type, glob or "*"):
                if version is not None and in_range(manifest.affected, version):
                    found.append(manifest)
                break
    return found


def _names_model_type(manifest: Any, name: str, model_type: str) -> bool:
    """Whether the manifest claims scenario ``name`` for model types it names (``scenario/glob``, not every one)."""
    for claim in getattr(manifest, "sweep", ()):
        scen, _, glob = claim.partition("/")
        if scen == name and glob not in ("", "*") and fnmatch.fnmatchcase(model_type, glob):
            return True
    return False


def explain(registry: Any, func: Scenario, subject: Subject, out: dict[str, Any],
            memo: dict[str, Any] | None = None, pair: dict[str, Any] | None = None) -> dict[str, Any]:
    """The verdict for a failed scenario (``out``): worse, unsupported, known, catalog-wrong or unknown.

    ``pair``: the differential run if one was made already. ``memo`` (one per scenario, updated in place): the
    patches that explained earlier failures, and how many full searches were made.
    """
    from ..._registry import INSTALLED, transformers_version

    statuses = {s.id: s for s in registry.status()}
    name = _name(func)
    installed = any(s.state in INSTALLED for s in statuses.values())
    if pair is None and installed:
        pair = differential.differential(registry, func, subject, (subject.model,),
                                         getattr(func, "record_forward", False), ours=None)
    if pair is not None and pair["upstream"].outcome == differential.PASS:
        return {"verdict": WORSE, "explained_by": None,
                "cause": "hf_genfix: upstream passes with every patch off" + (
                    f"; {pair['detail']}" if pair["ours"].outcome == differential.PASS else "")}
    lacking = subject.lacks(getattr(func, "needs", ()))
    if lacking:
        return {"verdict": UNSUPPORTED, "explained_by": None, "cause": lacking}
    # With hf_genfix the output is still upstream's (bitwise, or the same exception): a claimed patch that is
    # installed does not reach this architecture, and the defect is still the catalog's.
    untouched = pair is None or pair["verdict"] in (differential.UNCHANGED, differential.SAME_EXCEPTION)
    claims = _claims(registry, name, subject.model_type, transformers_version())
    record = open_finding(name, subject.model_type, transformers_version())
    if untouched and record is not None and out["outcome"] != UNSUPPORTED:
        # Upstream's output, and a record on file for this scenario, model type and release: it names the defect
        # more precisely than a patch that claims the scenario and leaves the call as upstream has it (4.53.0's
        # Gemma-3n NaN row, which model-gemma3n-uncached-kv-sharing's claim on unpadded-batch does not explain).
        return {"verdict": OPEN, "explained_by": None, "cause": f"open finding: {record['what']}"}
    if out.get("error"):
        # A refusal in words is raised by the patch whose fix defines that exception: named first, before any other
        # patch that claims the scenario (two patches wrap assisted decoding: the refusal is the one that raised).
        claims.sort(key=lambda manifest: not _defines(manifest, out["error"]))
    if pair is not None and pair["verdict"] == differential.REFUSED and out.get("error"):
        # An installed patch refused the call with its own exception where upstream is silently wrong: its defect,
        # whichever scenario met it (a new scenario found sliding-window-static-prefill-chunks' refusal on five
        # models no manifest had claimed it for: unknown, session 30).
        for manifest in registry.manifests():
            if statuses[manifest.id].state in INSTALLED and _defines(manifest, out["error"]):
                return {"verdict": KNOWN, "explained_by": manifest.id,
                        "cause": f"known: {manifest.id} (installed: it refuses the call, upstream is silently wrong)"}
    for manifest in claims:
        state = statuses[manifest.id].state
        if state not in INSTALLED:
            return {"verdict": KNOWN, "explained_by": manifest.id,
                    "cause": f"known: {manifest.id} (patch {state} here)"}
        if untouched and out["outcome"] == UNSUPPORTED:
            # transformers refuses the call in words with and without hf_genfix (4.49's longt5 and
            # switch_transformers: no static cache), where a patch claims the scenario for the models that take it:
            # a refusal, not that patch's defect.
            return {"verdict": UNSUPPORTED, "explained_by": None, "cause": out.get("message", "")}
        if untouched and out.get("error") and _defines(manifest, out["error"]):
            return {"verdict": KNOWN, "explained_by": manifest.id,
                    "cause": f"known: {manifest.id} (installed: it refuses the call, which upstream fails too)"}
        if untouched and out["outcome"] == "crash" and pair is not None:
            # The same exception with every patch off, and the installed patch that claims the scenario leaves it:
            # the user gets upstream's exception, a loud upstream error, whatever the claim says the scenario shows
            # elsewhere (5.2.0's GLM-MoE-DSA prompt lookup, a shape error in its indexer, had read "known:
            # decoding-prompt-lookup-length"; GraniteMoeHybrid's prefix reuse, an AttributeError, "known:
            # model-granitemoehybrid-chunk-state"). The claim is named, so a reader sees where it stops.
            return {"verdict": LOUD, "explained_by": None,
                    "cause": f"upstream raises it too, with every patch off: {pair['upstream'].message} "
                             f"({manifest.id} claims this scenario and leaves this architecture as upstream has it)"}
        if untouched and _names_model_type(manifest, name, subject.model_type):
            # A claim for every model type (``sweep = ["prompt-lookup"]``) says the scenario shows the patch's
            # defect, not that every wrong answer there is it: a silently wrong answer the installed patch leaves as
            # upstream has it on a model its claim does not name is judged below (Speech2Text2's prompt lookup on
            # 4.46-4.50, a reference ambiguity since mended, had read "known: decoding-prompt-lookup-length").
            return {"verdict": KNOWN, "explained_by": manifest.id,
                    "cause": f"known: {manifest.id} (installed, but it leaves this architecture as upstream has it)"}
        if pair is not None and pair["verdict"] == differential.REFUSED:
            # A patch that cannot correct the defect safely refuses the call in words: the defect is the
            # catalog's, and the user gets a loud error instead of upstream's silently wrong answer.
            return {"verdict": KNOWN, "explained_by": manifest.id,
                    "cause": f"known: {manifest.id} (installed: it refuses the call, upstream is silently wrong)"}
    # Force the patches that are not installed, one at a time: first those that explained this scenario before and
    # those that claim it; every other one only on the first FULL_SEARCHES architectures where the scenario fails
    # (a scenario that fails everywhere would otherwise cost a run per patch per architecture).
    memo = memo if memo is not None else {}
    order = memo.setdefault("explainers", [])[:]
    order += [m.id for m in registry.manifests() if m.id not in order
              and any(c.partition("/")[0] == name for c in getattr(m, "sweep", ()))]
    if memo.get("searched", 0) < FULL_SEARCHES:
        # Only the patches that could change a call of this model: forcing one whose every target is another
        # model's (or remote code's, or a tokenizer's where the scenario calls none) runs the same code as without
        # it (NemotronH's assisted scenarios forced 87 patches each on 5.12.1, 0.7 s a run; 226 s -> 147 s).
        memo["searched"] = memo.get("searched", 0) + 1
        manifests = {m.id: m for m in registry.manifests()}
        modules = _modules_of(subject)
        tokenizer = getattr(func, "calls_tokenizer", False)
        order += [pid for pid in statuses if pid not in order and pid in manifests
                  and not cannot_act(list(manifests[pid].targets), manifests[pid].family, modules, tokenizer)]
    for pid in order:
        status = statuses.get(pid)
        if status is None or status.state in INSTALLED or status.state in ("drift", "failed"):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # forcing a patch outside its range may warn about drift
            with registry.forced(pid):
                passes = observe(func, subject).outcome == differential.PASS
        if passes:
            if pid not in memo["explainers"]:
                memo["explainers"].insert(0, pid)
            wrong = status.state == "not-needed"
            note = f"; catalog wrong? its affected {status.affected!r} excludes this release" if wrong else ""
            return {"verdict": CATALOG_WRONG if wrong else KNOWN, "explained_by": pid,
                    "cause": f"fixed by {pid} (state {status.state}){note}", "catalog_wrong": wrong}
    if out["outcome"] == UNSUPPORTED:
        # transformers refuses the call in words, and no patch of the catalog removes the refusal (5.0.0's "Cannot
        # use prefill chunking without a cache" is a defect that sliding-window-prefill-chunks claims).
        return {"verdict": UNSUPPORTED, "explained_by": None, "cause": out.get("message", "")}
    if out["outcome"] == "crash" and pair is not None and pair["verdict"] == differential.REFUSED:
        # Upstream is wrong at an earlier stage (a first turn) and stops there; hf_genfix gets that stage right and
        # crashes in a later one. Run upstream on past its wrong stage: where it raises the same there, the crash is
        # upstream's own (5.3-5.12 Gemma-3: the second image turn's ValueError, masked by a wrong first turn).
        with registry.disabled(), past_earlier_stages():
            again = differential.observe(func, subject)
        ours = pair["ours"]
        if again.outcome == differential.RAISED and (again.error, again.message) == (ours.error, ours.message):
            return {"verdict": LOUD, "explained_by": None,
                    "cause": f"upstream raises it too, once past its own wrong earlier stage "
                             f"({pair['upstream'].message}): {again.message}"}
    if out["outcome"] == "crash" and (pair is None or pair["verdict"] == differential.SAME_EXCEPTION):
        # Loud: the user gets upstream's exception, with or without hf_genfix (4.57.6: CTRL, XGLM, TrOCR and OLMoE
        # with a static cache, shape errors). Listed with the exception; a patch may take it up later.
        return {"verdict": LOUD, "explained_by": None,
                "cause": "upstream raises it too, " + (f"with every patch off: {pair['upstream'].message}" if pair
                                                        else "no patch is installed here")}
    if record is not None and (pair is None or pair["verdict"] != differential.WORSE):
        return {"verdict": OPEN, "explained_by": None, "cause": f"open finding: {record['what']}"}
    cause = "unknown"
    if pair is not None and pair["verdict"] == differential.WORSE:
        cause += f"; without hf_genfix it fails otherwise: {pair['upstream'].message}"
    return {"verdict": UNKNOWN, "explained_by": None, "cause": cause}


# -- recall: does the sweep find the defects the catalog knows? ---------------------------------------------------
RECALL_TRIES = 2  # architectures per scenario and way of failing on which a patch not found yet is switched off alone


def rounding_limit() -> float:
    """The rounding threshold: ``tiny.ROUNDING`` in float32/64 (the calibrated models' rounding, with a margin);
    in half precision the tolerance is itself the dtype's measured noise (docs/precision.md): no band between."""
    from ..precision import current

    return ROUNDING if current().dtype in ("float32", "float64") else tolerance()


def suspect(diff: Any) -> bool:
    """Whether a passing oracle's max |logit diff| lies between the rounding threshold and the tolerance."""
    return isinstance(diff, (int, float)) and not isinstance(diff, bool) and rounding_limit() < diff <= tolerance()


# -- a second look at a suspect: the same model and scenario in float64 -------------------------------------------
# Between the rounding threshold and the tolerance sits either float32 rounding that a long path (a recurrence, a
# second turn over a state) accumulates, or a small real defect. float64 tells them apart without a guess: the same
# seed gives the same weights, rounding then shrinks by orders of magnitude (only generate()'s float32 copy of the
# logits stays: about one float32 ulp of the largest logit), while a defect keeps its size. Measured on 5.24.0's 14
# suspects (zamba, zamba2, granite, nemotron, hrm_text, olmo_hybrid: 2.1e-05 to 7.1e-05 in float32): 0 to 8.3e-06 in
# float64, each under half its float32 figure.
SETTLED = "settled"


class SecondLook:
    """The architecture rebuilt in float64 on first use (once per architecture), to rerun its suspect scenarios.

    In float64 a left-padded batch with eager attention gives NaN upstream, on every release (eager attention takes
    its softmax in float32, where ``finfo(float64).min`` is ``-inf``: docs/precision.md). A rerun that comes back
    NaN is made once more with SDPA, where the model has it, else with eager attention's softmax kept in float64
    (``_softmax_kept_in_float64``): the question is only whether the float32 figure shrinks in float64, and the
    oracle's no-cache forward runs the same kernel as the cached path either way."""

    def __init__(self, kind: str, model_type: str):
        self.kind, self.model_type = kind, model_type
        self._subjects: dict[str, Any] = {}
        self._failures: dict[str, str] = {}

    def _run(self, name: str, attn: str, wide_softmax: bool = False) -> tuple[dict[str, Any] | None, str]:
        from ..precision import precision

        wide = _softmax_kept_in_float64() if wide_softmax else contextlib.nullcontext()
        with precision("float64", attn=attn), wide:
            if attn not in self._subjects and attn not in self._failures:
                try:
                    self._subjects[attn] = KINDS[self.kind][1](self.model_type) if self.kind in KINDS \
                        else Subject(self.model_type)
                except Exception as exc:  # noqa: BLE001 - a model that has no float64 kernel (gpt_oss's grouped mm)
                    self._failures[attn] = f"cannot build in float64: {type(exc).__name__}: {_short(exc)}"
            if attn in self._failures:
                return None, self._failures[attn]
            out, _ = attempt(SCENARIOS[name], self._subjects[attn])
        return out, ""

    def diff(self, name: str) -> tuple[float | None, str]:
        """(max |logit diff| of scenario ``name`` in float64, "") or (None, why it could not run)."""
        from ..precision import current

        attn = current().attn
        out, why = self._run(name, attn)
        nan = out is not None and _is_nan(out.get("max_logit_diff"))
        if nan and attn == "eager":
            again, _ = self._run(name, "sdpa")
            uses = getattr(getattr(self._subjects.get("sdpa"), "model", None), "config", None)
            if again is not None and getattr(uses, "_attn_implementation", "eager") == "sdpa":
                out = again
                if out["outcome"] == PASS:
                    value = out.get("max_logit_diff")
                    return (float(value), "") if isinstance(value, (int, float)) else (None, "no figure in float64")
                return None, (f"in float64 it is NaN with eager attention (upstream: docs/precision.md) and "
                              f"{out['outcome']} with SDPA: {out.get('message', '')}").rstrip(": ")
        if nan and attn == "eager":
            # No SDPA (Zamba): eager attention once more with its float32 softmax kept in float64, where the pads'
            # all-masked rows stay finite; the cached path and the oracle's forward both run it.
            wide, _ = self._run(name, "eager", wide_softmax=True)
            if wide is not None and not _is_nan(wide.get("max_logit_diff")):
                out, nan = wide, False
        if out is None:
            return None, why
        value = out.get("max_logit_diff")
        if out["outcome"] == PASS and isinstance(value, (int, float)):
            return float(value), ""
        why = f"in float64 it is {out['outcome']}: {out.get('message', '')}".rstrip(": ")
        if nan:
            why += (" (NaN in float64 with eager attention, upstream: docs/precision.md; no SDPA for this model, and "
                    "NaN with its softmax kept in float64 too)")
        return None, why


@contextlib.contextmanager
def _softmax_kept_in_float64() -> Iterator[None]:
    """``torch.nn.functional.softmax(x, dtype=torch.float32)`` of a float64 ``x`` taken in float64, for the block:
    eager attention's float32 softmax of a float64 mask's ``finfo(float64).min`` (``-inf`` in float32) is NaN on an
    all-masked pad row (docs/precision.md). The sweep's float64 second look only, in its own process."""
    import torch
    import torch.nn.functional as functional

    plain = functional.softmax

    def softmax(input: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Any:  # noqa: A002
        if dtype is torch.float32 and getattr(input, "dtype", None) is torch.float64:
            dtype = torch.float64
        return plain(input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)

    functional.softmax = softmax
    try:
        yield
    finally:
        functional.softmax = plain


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def second_look(look: SecondLook, name: str, diff: float) -> tuple[str, str, float | None]:
    """(verdict, cause, float64 figure) of a suspect off by ``diff`` in float32: ``settled`` where float64 shrinks it
    to rounding (at most the threshold and half the float32 figure), ``unknown`` where it keeps its size (above the
    threshold and at least half the float32 figure: not rounding), ``suspect`` otherwise, with the figures."""
    from ..precision import current

    head = f"off by {diff:.3g} in float32: above the rounding threshold {rounding_limit():.0e}, within the oracle's " \
           f"tolerance {tolerance():.0e}"
    if current().dtype != "float32":
        return SUSPECT, head, None
    value, why = look.diff(name)
    if value is None:
        return SUSPECT, f"{head}; not settled: {why}", None
    if value <= ROUNDING and value <= diff / 2:
        return SETTLED, f"{head}; float64: {value:.2g} (rounding)", value
    if value > ROUNDING and value >= diff / 2:
        return UNKNOWN, f"{head}; float64 keeps it ({value:.3g}): not rounding, a defect", value
    return SUSPECT, f"{head}; float64: {value:.3g}, neither rounding nor the same size", value


def _refusal(message: str) -> bool:
    return any(word in message.lower() for word in _UNSUPPORTED)


def _tokenizer_side(target: str) -> bool:
    """A target that only tokenizers, their configuration files or the data collators reach."""
    module, _, attr = target.partition(":")
    return "tokeniz" in module or module.endswith("data_collator") or attr == "PretrainedConfig.get_config_dict"


def cannot_act(targets: list[str], family: str | None, modules: set[str], tokenizer: bool = False) -> str:
    """Why a patch with these ``targets`` (of ``family``) cannot change a call of a model made of ``modules``
    (``_modules_of``): "" when it can. ``tokenizer``: the scenario calls a tokenizer (``oracles.sweep.tokenizers``)."""
    remote = any(m.startswith("transformers_modules") for m in modules)  # trust_remote_code's module copies
    if family == "remote-code" and not remote:
        return "a remote-code defect: the sweep builds no remote-code model"
    if targets and all(_tokenizer_side(t) for t in targets) and not tokenizer:
        return "a tokenizer (or collator) defect: no scenario that calls a tokenizer changed or failed by it"
    own = [t.partition(":")[0] for t in targets
           if t.startswith("transformers.models.") and not t.startswith("transformers.models.auto.")]
    if targets and len(own) == len(targets) and not set(own) & modules:
        return "its targets are another model's"
    return ""


def _modules_of(subject: Any) -> set[str]:
    """The modules that define the classes of the subject's model and its sub-modules (and their bases)."""
    return {cls.__module__ for module in subject.model.modules() for cls in type(module).__mro__}


class Recall:
    """Which of the known defects (``known``: the patches whose probe shows their defect on this release) the sweep
    finds by itself (``doctor --sweep --recall``).

    A defect is found by a scenario where upstream (every patch off) fails its oracle -- a wrong answer, or an
    exception that is not a refusal in words; or passes it while the differential counts hf_genfix's answer as a
    correction (a call upstream raises on inside a scenario that lists such calls and goes on) -- on a model that
    can do what the scenario asks, and
    - its patch changes the call (it says so to ``hf_genfix.recording()``: ``Observation.changed``), or
    - with that one patch off, the scenario fails where hf_genfix passes, or fails otherwise than with hf_genfix
      (for the patches that do not report their changes; tried on ``RECALL_TRIES`` architectures per scenario and
      way upstream fails, while the patch is not found yet, and only where it can act: a patch of one model's
      module on that model, a remote-code patch on remote code, a tokenizer patch never -- the sweep calls no
      tokenizer), or
    - forcing it (a patch not installed here) removes the failure (``explain``'s search).
    A manifest's ``sweep`` claim alone is not a finding: it is the catalog's word, not the sweep's sight."""

    def __init__(self, registry: Any, known: Iterable[str]):
        self.registry = registry
        self.known = list(dict.fromkeys(known))
        manifests = {m.id: m for m in registry.manifests()}
        self.targets = {pid: list(manifests[pid].targets) for pid in self.known if pid in manifests}
        self.families = {pid: manifests[pid].family for pid in self.known if pid in manifests}
        self.hits: dict[str, list[dict[str, Any]]] = {}
        self.tries: dict[tuple[str, str, str], int] = {}
        self.tried: dict[str, int] = {}  # patch id -> runs with it alone off
        self.failing_upstream = 0  # scenario runs where upstream fails on a model that can do them

    def installed(self) -> list[str]:
        """The known ones installed now (a patch is installed when its target module is first imported)."""
        from ..._registry import INSTALLED

        states = {s.id: s.state for s in self.registry.status()}
        return [pid for pid in self.known if states.get(pid) in INSTALLED]

    def _add(self, pid: str, subject: Any, name: str, how: str, pair: dict[str, Any] | None) -> None:
        upstream = pair["upstream"] if pair is not None else None
        self.hits.setdefault(pid, []).append({
            "arch": subject.model_type, "scenario": name, "how": how,
            "upstream": upstream.message[:200] if upstream is not None else "",
            "upstream_max_logit_diff": upstream.figures.get("max_logit_diff") if upstream is not None else None})

    def can_act(self, pid: str, modules: set[str], tokenizer: bool = False) -> str:
        """Why the patch cannot change a call of this model ("" when it can); ``tokenizer``: the scenario calls a
        tokenizer (``oracles.sweep.tokenizers``)."""
        return cannot_act(self.targets.get(pid, []), self.families.get(pid), modules, tokenizer)

    def attribute(self, func: Scenario, subject: Any, name: str, out: dict[str, Any],
                  pair: dict[str, Any] | None) -> None:
        explained = out.get("explained_by")
        if explained in self.known and str(out.get("cause", "")).startswith("fixed by"):
            self._add(explained, subject, name, "forcing it removes the failure", pair)
        if pair is None:
            return
        u, o = pair["upstream"], pair["ours"]
        # Upstream passes, yet the differential counts hf_genfix's answer as a correction: a call of a scenario that
        # lists the loud ones and goes on raised upstream and is answered right (4.51.3's Gemma-2 with
        # cache_implementation="sliding_window", sliding-window-hybrid-cache), or upstream is off by 10x more than
        # hf_genfix under the tolerance. The patch that changed that call is found there too. So is one where every
        # call of such a scenario raised upstream (it cannot run) and hf_genfix answers them right (4.56.2's chunked
        # prefill into each static sliding cache: IndexError upstream, sliding-window-static-chunk).
        answered = u.outcome in (differential.PASS, differential.SKIPPED) and pair["verdict"] == differential.CORRECTED
        if (u.outcome not in (differential.WRONG, differential.RAISED) and not answered) \
                or subject.lacks(getattr(func, "needs", ())):
            return
        if u.outcome == differential.RAISED and _refusal(u.message):
            return
        self.failing_upstream += 1
        if pair["verdict"] in (differential.UNCHANGED, differential.SAME_EXCEPTION):
            return  # hf_genfix leaves upstream's answer: no installed patch acts here
        for pid in o.changed:
            if pid in self.known:
                self._add(pid, subject, name, f"it changes the call ({o.changed[pid]} call(s))", pair)
        # The others (a patch that does not report, or a second patch acting on the same call) are switched off
        # alone, on the first RECALL_TRIES architectures per scenario, until found. Only those the run reached: a
        # patch whose switch hf_genfix's run never read, or whose every read its wrapper took back as upstream's
        # call (``record.unchanged()``), runs the same code switched off (``differential``'s same-code rule), so
        # that run could not find it (NemotronH alone on 5.12.1: 847 s -> 226 s, the same patches found).
        reached = o.reached
        modules = _modules_of(subject)
        for pid in self.installed():
            if "*" not in reached and pid not in reached:
                continue
            # Per way upstream fails (its exception type, or a wrong answer): another failure of the same scenario
            # may be another defect (5.24.0: the remote phi3 repo fails at import, chatglm3 on its config).
            key = (pid, name, u.error or u.outcome)
            if pid in self.hits or self.can_act(pid, modules, getattr(func, "calls_tokenizer", False)) \
                    or self.tries.get(key, 0) >= RECALL_TRIES:
                continue
            self.tries[key] = self.tries.get(key, 0) + 1
            self.tried[pid] = self.tried.get(pid, 0) + 1
            with self.registry.disabled(pid):
                off = observe(func, subject)
            if off.outcome != differential.PASS and (
                    o.outcome == differential.PASS or off.outcome != o.outcome
                    or differential.difference(off.outputs, o.outputs)):
                self._add(pid, subject, name, "with it alone off the scenario fails", pair)

    def state(self) -> dict[str, Any]:
        """What this tracker has seen (a worker of a ``jobs`` sweep sends it back: ``absorb``)."""
        return {"hits": self.hits, "tried": self.tried, "failing_upstream": self.failing_upstream}

    def absorb(self, states: Iterable[dict[str, Any]], order: dict[str, int]) -> None:
        """Add the workers' ``state()``s to this one: the hits in the sweep's order of architectures (the first
        is the one a report quotes), the counts summed."""
        for state in states:
            for pid, hits in state.get("hits", {}).items():
                self.hits.setdefault(pid, []).extend(hits)
            for pid, n in state.get("tried", {}).items():
                self.tried[pid] = self.tried.get(pid, 0) + n
            self.failing_upstream += state.get("failing_upstream", 0)
        for hits in self.hits.values():
            hits.sort(key=lambda hit: order.get(hit["arch"], len(order)))

    def why(self, pid: str, sweep: dict[str, Any]) -> str:
        """Why the sweep did not find ``pid``, from what it built and ran."""
        remote = {f"transformers_modules.{a}" for a in sweep.get("architectures", {}) if a.startswith("remote-")}
        general = self.can_act(pid, remote or {"-"})  # remote code built: a remote-code patch could act there
        if general and not general.startswith("its targets"):
            return general
        folders = sorted({t.split(".")[2] for t in self.targets.get(pid, [])
                          if t.startswith("transformers.models.") and not t.startswith("transformers.models.auto.")})
        built = {a.replace("-", "_") for a in sweep.get("architectures", {})}
        if folders and not set(folders) & built:
            reasons = {t: r for t, r in sweep.get("not_buildable", {}).items() if t.replace("-", "_") in folders}
            return (f"its model ({', '.join(folders)}) is not among the sweep's architectures"
                    + (f" ({'; '.join(f'{t}: {r}' for t, r in reasons.items())})" if reasons else ""))
        if pid not in self.installed():
            return "not installed here, and forcing it removed no failure of the sweep"
        return (f"no scenario where upstream fails is changed by it ({self.failing_upstream} scenario run(s) fail "
                f"upstream; {self.tried.get(pid, 0)} run(s) with it alone off)")

    def result(self, sweep: dict[str, Any]) -> dict[str, Any]:
        from ..._registry import transformers_version

        return {"transformers": transformers_version(), "known": self.known,
                "found": {pid: self.hits[pid] for pid in self.known if pid in self.hits},
                "missed": {pid: self.why(pid, sweep) for pid in self.known if pid not in self.hits},
                "failing_upstream": self.failing_upstream}


def recall_lines(recall: dict[str, Any]) -> list[str]:
    """'K of N known defects found by the sweep', each found one (where first) and each miss with why."""
    known, found, missed, version = recall["known"], recall["found"], recall["missed"], recall.get("transformers")
    lines = [f"recall{f' on transformers {version}' if version else ''}: {len(found)} of {len(known)} known "
             f"defects found by the sweep" + (f"; missed: {', '.join(missed)}" if missed else "")]
    for pid, hits in found.items():
        first = hits[0]
        more = f" (+{len(hits) - 1} more)" if len(hits) > 1 else ""
        lines.append(f"  found {pid}: {first['arch']} / {first['scenario']}: {first['how']}{more}")
    lines += [f"  MISSED {pid}: {why}" for pid, why in missed.items()]
    return lines


def open_findings() -> list[dict[str, Any]]:
    """patches/open-findings.json's records (``hf_genfix.catalog.open_findings``)."""
    from ...catalog import open_findings as records

    return records()


def open_finding(scenario: str, model_type: str, version: str | None) -> dict[str, Any] | None:
    """The open-finding record that covers this scenario on this model type and release, if one does."""
    from ...catalog import open_finding as record

    return record(scenario, model_type, version)


def run_sweep(registry: Any = None, archs: Iterable[str] | None = None, scenarios: Iterable[str] | None = None,
              budget_s: float | None = None, differential_all: bool = False,
              progress: Callable[[str], None] | None = None, quick: bool = False,
              recall: Iterable[str] | None = None, jobs: int = 1) -> dict[str, Any]:
    """Run ``scenarios`` (all by default) on ``archs`` (every decoder-only type by default) and judge them.

    ``differential_all``: also run every scenario without hf_genfix and record ``differential.compare``'s verdict
    (a ``worse`` one is a finding). ``progress``: called with one line per architecture (doctor: stderr).
    ``budget_s`` stops starting new architectures (coverage, never a verdict). ``quick``: a deterministic sample
    of the architectures (``QUICK_ARCHS`` of them unless ``archs`` names them) and of each scenario's combinations
    (``pick``). ``recall``: the ids of the patches whose probe shows their defect on this release (doctor's); the
    sweep then says which of them it finds by itself (``Recall``; it implies ``differential_all``). ``jobs``: run
    the architectures in that many worker processes (``sweep.jobs``; a quick sweep runs in this one).
    """
    global _quick
    _quick = quick
    try:
        return _run_sweep(registry, archs, scenarios, budget_s, differential_all or recall is not None, progress,
                          quick, None if recall is None else list(recall), jobs)
    finally:
        _quick = False


class ArchRun:
    """What judging one architecture needs besides the architecture: the scenarios, the differential's switch,
    the recall tracker and the explanations already searched (``explain``'s memo, per scenario). The sweep's own
    process has one; so does each worker process of a ``jobs`` sweep (``sweep.jobs``)."""

    def __init__(self, registry: Any, names: list[str], differential_all: bool, recall: list[str] | None):
        self.registry = registry
        self.names = names
        self.differential_all = differential_all
        self.tracker = Recall(registry, recall) if recall is not None else None
        self.memos: dict[str, dict[str, Any]] = {}
        self.summaries = {s.id: s.summary for s in registry.status()}

    def judge(self, model_type: str, kind: str) -> dict[str, Any]:
        """Build ``model_type`` tiny, run and judge every scenario of its kind: a plain record of the outcome
        (``merge`` adds it to the report), the same from a worker process as from this one."""
        registry, summaries = self.registry, self.summaries
        done: dict[str, Any] = {"type": model_type, "skipped": None, "unusable": None, "result": None,
                                "findings": [], "settled": [], "pairs": [], "same_code": 0}
        arch_start = time.perf_counter()
        try:
            subject = KINDS[kind][1](model_type) if kind in KINDS else Subject(model_type)
        except ProbeSkipped as exc:
            done.update(skipped=str(exc), line=f"not built tiny ({exc})")
            return done
        except Exception as exc:  # noqa: BLE001
            done["skipped"] = f"cannot build: {type(exc).__name__}: {_short(exc)}"
            done["line"] = f"not built tiny ({done['skipped']})"
            return done
        per: dict[str, dict[str, Any]] = {}
        runs: dict[str, differential.Observation] = {}
        look = SecondLook(kind, model_type)
        here = [n for n in self.names if kind_of(SCENARIOS[n]) == kind]
        for name in here:
            per[name], obs = attempt(SCENARIOS[name], subject)
            if obs is not None:
                runs[name] = obs
        ran = [o for o in per.values() if o["outcome"] not in (SKIPPED, UNSUPPORTED)]
        messages = {o.get("message", "").split(" (at ")[0] for o in ran}
        if len(ran) >= 3 and all(o["outcome"] == "crash" for o in ran) and len(messages) == 1:
            # Every scenario dies the same way: the tiny config does not suit this architecture (a hybrid with
            # no attention layer at 2 layers, a head size the defaults break), not one generation path.
            for out in per.values():
                out["verdict"] = UNUSABLE if out["outcome"] == "crash" else out["outcome"]
            done.update(unusable=ran[0]["message"], line=f"unusable tiny, every scenario fails with {ran[0]['message']}",
                        result={"seconds": round(time.perf_counter() - arch_start, 3), "scenarios": per})
            return done
        for name in here:
            func, out = SCENARIOS[name], per[name]
            pair = None
            if self.differential_all and name in runs:
                pair = differential.differential(registry, func, subject, (subject.model,),
                                                 getattr(func, "record_forward", False), ours=runs[name])
                verdict, detail = pair["verdict"], pair["detail"]
                if verdict != differential.IDENTICAL and subject.lacks(getattr(func, "needs", ())):
                    verdict = _unsupported_pair(pair)
                if verdict == differential.WORSE:
                    verdict, detail = _rounding(registry, func, subject, pair) or (verdict, detail)
                out["differential"] = {"verdict": verdict, "detail": detail}
                done["pairs"].append(verdict)
                done["same_code"] += bool(pair.get("same_code")) and pair["verdict"] != differential.NOT_RUN
            if out["outcome"] == PASS:
                out["verdict"] = PASS
                if pair is not None and out["differential"]["verdict"] == differential.WORSE:
                    out.update(verdict=WORSE, cause=f"hf_genfix: {pair['detail']}", explained_by=None)
                elif suspect(out.get("max_logit_diff")):
                    verdict, cause, value = second_look(look, name, out["max_logit_diff"])
                    out.update(verdict=PASS if verdict == SETTLED else verdict, explained_by=None, cause=cause,
                               float64_logit_diff=value)
                    if verdict == UNKNOWN:
                        out["outcome"] = "defect"  # in float64 it keeps its size: the pass was the tolerance's
                    if verdict == SETTLED:
                        done["settled"].append({"arch": model_type, "scenario": name,
                                                "max_logit_diff": out["max_logit_diff"],
                                                "float64_logit_diff": value, "cause": cause})
            elif out["outcome"] == SKIPPED:
                out["verdict"] = SKIPPED
            elif out["outcome"] == UNSUPPORTED and name not in runs:
                out["verdict"] = UNSUPPORTED
            else:
                out.update(explain(registry, func, subject, out, self.memos.setdefault(name, {}), pair))
            if out.get("differential", {}).get("verdict") == differential.WORSE and out["verdict"] != WORSE:
                # The differential counts it worse (both fail, hf_genfix otherwise than upstream): it is listed as
                # worse too, so that the summary's count is the number of lines (what explained the failure stays
                # in the cause).
                out.update(verdict=WORSE, cause=f"hf_genfix: {out['differential']['detail']} "
                                                f"(the failure itself: {out.get('cause', '')})", explained_by=None)
            if self.tracker is not None:
                self.tracker.attribute(func, subject, name, out, pair)
            if out["verdict"] in (PASS, SKIPPED):
                continue
            finding = {"arch": model_type, "scenario": name, "kind": out["outcome"], "verdict": out["verdict"],
                       "step": out.get("step"), "row": out.get("row"),
                       "max_logit_diff": out.get("max_logit_diff"), "message": out.get("message", ""),
                       "cause": out.get("cause", out.get("message", "")), "explained_by": out.get("explained_by"),
                       "summary": summaries.get(out.get("explained_by") or "", ""),
                       "catalog_wrong": out.get("catalog_wrong", False)}
            group = {CATALOG_WRONG: KNOWN, WORSE: UNKNOWN, LOUD: UNSUPPORTED, OPEN: KNOWN}.get(out["verdict"],
                                                                                            out["verdict"])
            if out["verdict"] == UNSUPPORTED and name not in runs:
                continue  # not run at all (no KV cache): in the per-architecture results only
            done["findings"].append((group, finding))
        seconds = time.perf_counter() - arch_start
        done["result"] = {"seconds": round(seconds, 3), "scenarios": per}
        verdicts = [o["verdict"] for o in per.values()]
        counts = ", ".join(f"{verdicts.count(v)} {v}" for v in (PASS, SKIPPED, UNSUPPORTED, LOUD, KNOWN,
                                                                   CATALOG_WRONG, WORSE, UNKNOWN) if verdicts.count(v))
        done["line"] = f"{len(here)} scenarios in {seconds:.1f} s: {counts}"
        return done


def _run_sweep(registry: Any, archs: Iterable[str] | None, scenarios: Iterable[str] | None, budget_s: float | None,
               differential_all: bool, progress: Callable[[str], None] | None, quick: bool,
               recall: list[str] | None = None, jobs: int = 1) -> dict[str, Any]:
    import hf_genfix

    if jobs > 1 and registry is not None and registry is not hf_genfix._activation.registry():
        raise ValueError("run_sweep(jobs>1): the workers judge with the process-wide registry (hf_genfix's own), "
                         "not the one given")
    registry = registry or hf_genfix._activation.registry()
    start = time.perf_counter()
    names = list(scenarios or SCENARIOS)
    bad = [n for n in names if n not in SCENARIOS]
    if bad:
        raise SystemExit(f"hf-genfix doctor --sweep: unknown scenario(s) {bad}; known: {list(SCENARIOS)}")
    kinds = kinds_of(archs)
    # Only the kinds some chosen scenario runs on (a scenario runs on the subjects of its own kind).
    kinds = {t: k for t, k in kinds.items() if any(kind_of(SCENARIOS[n]) == k for n in names)}
    types = list(kinds)
    want = {k: KINDS[k][2] for k in KINDS} if quick and not archs else None
    if want is not None:
        # A quick sweep: per kind, the first built ones of every third type, then the next ones.
        per_kind = {k: [t for t in types if kinds[t] == k] for k in KINDS}
        types = [t for listed in per_kind.values() for offset in range(3) for t in listed[offset::3]]
        types = [t for t in QUICK_FIRST if t in types] + [t for t in types if t not in QUICK_FIRST]
    results: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    findings: dict[str, list[dict[str, Any]]] = {v: [] for v in (UNKNOWN, KNOWN, UNSUPPORTED, SUSPECT)}
    settled: list[dict[str, Any]] = []
    not_reached: list[str] = []
    unusable: dict[str, str] = {}
    pairs: list[str] = []
    same_code = [0]  # pairs whose upstream run was hf_genfix's own (no patch changed a call: ``differential``)
    say = progress or (lambda line: None)
    width = len(str(len(types)))
    here = ArchRun(registry, names, differential_all, recall)
    tracker = here.tracker

    def merge(index: int, done: dict[str, Any]) -> None:
        model_type = done["type"]
        say(f"[{index:>{width}}/{len(types)}] {model_type}: {done['line']}"
            + (f" (elapsed {time.perf_counter() - start:.0f} s)" if done["result"] and not done["unusable"] else ""))
        if done["skipped"] is not None:
            skipped[model_type] = done["skipped"]
            return
        if done["unusable"] is not None:
            unusable[model_type] = done["unusable"]
        results[model_type] = done["result"]
        for group, finding in done["findings"]:
            findings[group].append(finding)
        settled.extend(done["settled"])
        pairs.extend(done["pairs"])
        same_code[0] += done.get("same_code", 0)

    if jobs > 1 and want is None:
        from . import jobs as parallel

        records, states = parallel.judge_all(types, kinds, jobs, here, budget_s, start, merge)
        not_reached.extend(t for t in types if t not in records)
        # Each worker judged its share in the order given; the report lists them in the sweep's order.
        results = {t: results[t] for t in types if t in results}
        order = {t: i for i, t in enumerate(types)}
        for group in findings.values():
            group.sort(key=lambda f: order.get(f["arch"], len(order)))
        settled.sort(key=lambda f: order.get(f["arch"], len(order)))
        if tracker is not None:
            tracker.absorb(states, order)
    else:
        for index, model_type in enumerate(types, 1):
            kind = kinds[model_type]
            if want is not None and sum(1 for t in results if kinds[t] == kind) >= want[kind]:
                continue
            if budget_s is not None and time.perf_counter() - start > budget_s:
                not_reached.append(model_type)
                continue
            merge(index, here.judge(model_type, kind))
    out = {
        "seconds": round(time.perf_counter() - start, 3),
        "scenarios": names,
        "kinds": {k: {"architectures": sorted(t for t in results if kinds[t] == k),
                      "scenarios": [n for n in names if kind_of(SCENARIOS[n]) == k]}
                  for k in KINDS if k in kinds.values()},
        "architectures": results,
        "not_buildable": skipped,
        "unusable": unusable,
        "not_reached": not_reached,
        "quick": quick,
        "unknown": findings[UNKNOWN],
        "known": findings[KNOWN],
        "unsupported": findings[UNSUPPORTED],
        "suspect": findings[SUSPECT],
        "settled": settled,
    }
    if tracker is not None:
        out["recall"] = tracker.result(out)
    if differential_all and scenarios is None:
        _add_save_scenarios(registry, out, pairs, say)
    if differential_all:
        from .. import concurrency

        # Threads and forks: once per process, not per architecture (a patched call in one thread, ordinary work
        # in another; a fork while another thread is inside activate() / forced()).
        process = concurrency.run_differential(registry)
        for name, pair in process.items():
            pairs.append(pair["verdict"])
            if pair["verdict"] == differential.WORSE:
                findings[UNKNOWN].append({
                    "arch": "process", "scenario": name, "kind": "defect", "verdict": WORSE, "step": None,
                    "row": None, "max_logit_diff": None, "message": pair["detail"],
                    "cause": f"hf_genfix: {pair['detail']}", "explained_by": None, "summary": "",
                    "catalog_wrong": False})
        out["process"] = process
        out["seconds"] = round(time.perf_counter() - start, 3)
        counts = differential.tally(pairs)
        out["differential"] = {"counts": counts, "summary": differential.summary_line(counts),
                               "same_code": same_code[0]}
    out["counts"] = counts_of(out)  # after the save and process scenarios: every line listed is counted
    return out


def _add_save_scenarios(registry: Any, out: dict[str, Any], pairs: list[str], say: Callable[[str], None]) -> None:
    """Save -> reload -> compare (``oracles.saving``: tokenizers, remote-code configurations and models, and their
    copies): counted with the generation scenarios; a folder hf_genfix saves otherwise is a ``worse`` finding."""
    from .. import saving

    start = time.perf_counter()
    saved = saving.run_scenarios(registry)
    out["saved"] = saved
    for name, pair in saved["pairs"].items():
        pairs.append(pair["verdict"])
        if pair["verdict"] == differential.WORSE:
            out["unknown"].append({"arch": "-", "scenario": name, "kind": "save", "verdict": WORSE, "step": None,
                                   "row": None, "max_logit_diff": None, "message": pair["detail"],
                                   "cause": f"hf_genfix: {pair['detail']}", "explained_by": None, "summary": "",
                                   "catalog_wrong": False})
    say(f"save -> reload -> compare: {saved['summary']} in {time.perf_counter() - start:.1f} s")


def _rounding(registry: Any, func: Scenario, subject: Subject, pair: dict[str, Any]) -> tuple[str, str] | None:
    """(``rounding``, why) where both pass, the outputs differ by float rounding only, and one installed patch whose
    fix module documents why it cannot be bitwise (``NOT_BITWISE``) is the whole difference: with it off the outputs
    are upstream's, bitwise. None otherwise (the pair stays worse)."""
    from hf_genfix import catalog

    from ..._registry import INSTALLED

    u, o = pair["upstream"], pair["ours"]
    if u.outcome != differential.PASS or o.outcome != differential.PASS:
        return None
    # A move of at most ROUNDING_LIMIT, or any move that leaves hf_genfix nearer the oracle than upstream (both pass:
    # upstream's distance is then float error of the path the patch replaces; Falcon-H1's assisted decoding on
    # 5.25.0, 1.1e-05 upstream against 1.2e-06 with decoding-assisted-recurrent-history).
    answered = differential.answered_where_upstream_raised(u, o)
    if not answered:
        moved = differential.largest_difference(u.outputs, o.outputs)
        if moved > differential.ROUNDING_LIMIT and not _nearer(o, u, moved):
            return None
    # else: a scenario of several calls ran some that upstream raises on (both pass the oracle, every call of ours
    # included): the outputs cannot be paired, and the patch found below must leave exactly upstream's when off
    # (5.8.1's Gemma-4, chunked prefill into each cache: sliding-window-kv-shared-zero gives StaticCache the layers
    # whose absence is upstream's IndexError, and moves the hybrid run by its documented rounding).
    for status in registry.status():
        if status.state not in INSTALLED:
            continue
        manifest = next(m for m in registry.manifests() if m.id == status.id)
        reason = getattr(catalog.fix(manifest), "NOT_BITWISE", None)
        if not reason:
            continue
        with registry.disabled(status.id):
            without = observe(func, subject)
        if without.outcome == differential.PASS and not differential.difference(u.outputs, without.outputs):
            also = f"; it answers right where upstream raises ({', '.join(answered)})" if answered else ""
            return differential.ROUNDING, (f"{pair['detail']}; bitwise upstream's with {status.id} off, which "
                                           f"cannot be bitwise: {reason}{also}")
    return None


def _nearer(ours: Any, upstream: Any, moved: float) -> bool:
    """Whether both runs measured their distance to the oracle, hf_genfix's is the smaller, and the outputs moved
    no further than the two distances allow (the move is the difference between the two errors, nothing else)."""
    distances = differential.oracle_distances(ours, upstream)
    return distances is not None and distances[0] < distances[1] and moved <= sum(distances)


def _unsupported_pair(pair: dict[str, Any]) -> str:
    """The differential verdict where the model cannot do what the scenario asks: the oracle means nothing, but
    hf_genfix must still not raise where upstream returned, nor change a right answer."""
    u, o = pair["upstream"], pair["ours"]
    if u.outcome == differential.PASS or (o.outcome == differential.RAISED and u.outcome != differential.RAISED):
        return pair["verdict"]
    return differential.UNSUPPORTED


def counts_of(sweep: dict[str, Any]) -> dict[str, int]:
    """The summary's numbers, each the number of findings listed (one line each in the text report)."""
    worse = sum(1 for f in sweep["unknown"] if f["verdict"] == WORSE)
    wrong = sum(1 for f in sweep.get("known", []) if f.get("catalog_wrong"))
    loud = sum(1 for f in sweep.get("unsupported", []) if f["verdict"] == LOUD)
    opened = sum(1 for f in sweep.get("known", []) if f["verdict"] == OPEN)
    return {"unknown": len(sweep["unknown"]) - worse, "worse": worse, "open": opened,
            "known": len(sweep.get("known", [])) - wrong - opened,
            "catalog_wrong": wrong, "unsupported": len(sweep.get("unsupported", [])) - loud, "upstream_error": loud,
            "suspect": len(sweep.get("suspect", [])), "settled": len(sweep.get("settled", []))}


def failed(sweep: dict[str, Any]) -> bool:
    """Exit status 1: an unknown defect, a regression hf_genfix causes, or a catalog range that is wrong."""
    return bool(sweep["unknown"]) or any(f.get("catalog_wrong") for f in sweep.get("known", []))


def render_text(sweep: dict[str, Any]) -> str:
    archs = sweep["architectures"]
    ran = sum(1 for a in archs.values() for o in a["scenarios"].values()
              if o["outcome"] != SKIPPED and not o.get("not_run"))
    lines = [
        f"sweep: {len(archs)} architectures x {len(sweep['scenarios'])} scenarios ({ran} runs) in "
        f"{sweep['seconds']:.1f} s; {len(sweep['not_buildable'])} model types not buildable tiny"
        + (f"; {len(sweep['not_reached'])} not reached within the sweep budget" if sweep["not_reached"] else "")
        + (f"; decoder-only models with {sweep['attn']} attention (eager where they lack it)"
           if sweep.get("attn", "eager") != "eager" else "")
    ]
    if len(sweep.get("kinds", {})) > 1:
        lines.append("  by kind: " + "; ".join(f"{k} {len(v['architectures'])} architectures x "
                                               f"{len(v['scenarios'])} scenarios" for k, v in sweep["kinds"].items()))
    for arch, message in sweep.get("unusable", {}).items():
        lines.append(f"  unusable tiny: {arch}: every scenario fails with {message}")
    for f in sweep["unknown"] + sweep.get("known", []):
        label = {WORSE: "WORSE THAN UPSTREAM", UNKNOWN: "UNKNOWN DEFECT", CATALOG_WRONG: "CATALOG WRONG",
                 OPEN: "OPEN (on file, not patched)"}.get(
            f["verdict"], f["verdict"])
        where = f"step {f['step']}" if f.get("step") is not None else "-"
        diff = f.get("max_logit_diff")
        diff_text = f", max |logit diff| vs the oracle {diff:.3g}" if isinstance(diff, (int, float)) else ""
        patch = f" -- {f['explained_by']}: {f['summary']}" if f.get("explained_by") and f.get("summary") else ""
        lines.append(f"  {label}: {f['arch']} / {f['scenario']} ({f['kind']}, {where}{diff_text}): "
                     f"{f['message']} [{f['cause']}]{patch}")
    for f in sweep.get("suspect", []):
        lines.append(f"  SUSPECT: {f['arch']} / {f['scenario']}: {f['cause']}")
    if sweep.get("settled"):
        lines.append(f"  settled as rounding in float64 ({len(sweep['settled'])}): " + ", ".join(
            f"{f['arch']} / {f['scenario']} {f['max_logit_diff']:.2g} -> {f['float64_logit_diff']:.2g}"
            for f in sweep["settled"]))
    for f in sweep.get("unsupported", []):
        lines.append(f"  {f['verdict']}: {f['arch']} / {f['scenario']}: {f['cause']}")
    present = {o.get("verdict") for a in archs.values() for o in a["scenarios"].values()}
    if present & set(MEANING):
        lines.append("verdicts: " + "; ".join(f"{v} = {MEANING[v]}" for v in MEANING if v in present)
                     + ". The number is the max |logit| difference against the oracle (a no-cache forward of each "
                       "unpadded row).")
    if sweep.get("differential"):
        lines.append(f"differential (with vs without hf_genfix): {sweep['differential']['summary']}"
                     + (f" ({sweep['differential']['same_code']} of them ran no patch that changed a call: upstream's "
                        f"run is hf_genfix's)" if sweep["differential"].get("same_code") else ""))
    if sweep.get("saved"):
        lines.append(f"  of which saved folders (save -> reload -> compare): {sweep['saved']['summary']}")
    if sweep.get("recall"):
        lines.extend(recall_lines(sweep["recall"]))
    n = counts_of(sweep)
    lines.append(f"sweep: {'FAILED' if failed(sweep) else 'OK'}: {n['unknown']} unknown defect(s), {n['worse']} worse "
                 f"than upstream, {n['open']} open (on file, not patched), {n['known']} known (in the catalog), "
                 f"{n['unsupported']} unsupported by the model, "
                 f"{n['upstream_error']} loud upstream error(s), {n['suspect']} suspect"
                 + (f", {n['catalog_wrong']} explained by a patch whose range excludes this release (catalog wrong)"
                    if n["catalog_wrong"] else ""))
    return "\n".join(lines)


def stderr_progress(line: str) -> None:
    print(f"hf-genfix doctor --sweep {line}", file=sys.stderr, flush=True)


def _as_dynamic_cache(cache: Any) -> Any:
    """A legacy tuple cache wrapped as generate() wraps it (``DynamicCache.from_legacy_cache``); None when ``cache``
    is no tuple or the release has no such constructor."""
    if not isinstance(cache, tuple):
        return None
    from transformers import DynamicCache

    convert = getattr(DynamicCache, "from_legacy_cache", None)
    try:
        return convert(cache) if convert is not None else None
    except Exception:  # noqa: BLE001 - a tuple this release cannot wrap: nothing more to learn
        return None

