"""Tiny random models built from configs (no downloads): hidden 32, 2 layers, vocab 128, eval mode; float32 on
the CPU unless inside ``precision()`` (see ``precision.py``)."""

from __future__ import annotations

from typing import Any

from .outcome import ProbeSkipped
from .precision import cast, current

# Keys every decoder config understands (through its attribute_map where it names them differently).
TINY_DEFAULTS: dict[str, Any] = dict(
    vocab_size=128,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
    tie_word_embeddings=False,
)

# Per-architecture keys a tiny config needs on top (or instead) of the defaults.
_PER_TYPE: dict[str, dict[str, Any]] = {
    "gpt2": dict(n_inner=64, num_key_value_heads=None, intermediate_size=None),
    "gpt_bigcode": dict(n_inner=64, num_key_value_heads=None, intermediate_size=None, multi_query=True),
    # Before 5.x the config does not map num_hidden_layers onto num_layers (then it checks attention_types).
    "gpt_neo": dict(attention_types=[[["global", "local"], 1]], window_size=256, num_key_value_heads=None,
                    intermediate_size=64, num_layers=2),
    "gptj": dict(n_inner=64, rotary_dim=4, num_key_value_heads=None, intermediate_size=None),
    # CodeGen: GPT-J's keys; its rotary_dim 64 is wider than a head of 8 (shape error in the first forward).
    "codegen": dict(n_inner=64, rotary_dim=4, num_key_value_heads=None, intermediate_size=None),
    "gpt_neox": dict(num_key_value_heads=None, rotary_pct=0.5),
    "opt": dict(ffn_dim=64, word_embed_proj_dim=32, num_key_value_heads=None, intermediate_size=None),
    "bloom": dict(n_head=4, num_key_value_heads=None, intermediate_size=None),
    "falcon": dict(num_kv_heads=2, new_decoder_architecture=True, num_key_value_heads=None,
                   intermediate_size=None),
    "phi": dict(num_key_value_heads=None, partial_rotary_factor=0.5),
    "gemma": dict(head_dim=8),
    "gemma2": dict(head_dim=8, query_pre_attn_scalar=8),
    "gemma3_text": dict(head_dim=8, query_pre_attn_scalar=8),
    # Gemma-4's text model as the sliding-window oracles build it (oracles/sliding.py): its per-layer inputs
    # (262144 x 256 per layer) alone are 134M parameters, its global heads 512 wide.
    "gemma4_text": dict(head_dim=8, global_head_dim=8, hidden_size_per_layer_input=8, vocab_size_per_layer_input=128),
    # Gemma-3n's text model: one KV-sharing layer (its default, 15 of 35, leaves no layer to share with in 2), its
    # per-layer inputs small, one sparsity value per layer. Its uncached path was wrong before 5.6 (the sharing layer
    # computed its own keys; model-gemma3n-uncached-kv-sharing), so until that patch the sweep did not build it.
    "gemma3n_text": dict(num_hidden_layers=3, layer_types=["full_attention", "sliding_attention", "sliding_attention"],
                         num_kv_shared_layers=1, head_dim=8, hidden_size_per_layer_input=8,
                         vocab_size_per_layer_input=128, activation_sparsity_pattern=[0.0] * 3, laurel_rank=4),
    # DBRX keeps its attention and expert sizes in nested configs (ffn_hidden_size 3584: 2.8M parameters on 4.x), and
    # 5.x's attention reads attn_config.rope_theta, which its attention config no longer declares (the default
    # config cannot build: AttributeError), so the tiny one gives it; its attention clamps by clip_qkv unconditionally
    # (None: a TypeError in the first forward), so it gets 8, as the released checkpoints have. d_model by its own name:
    # 5.x sizes the experts from it before hidden_size is mapped onto it (and see tiny_config: ffn_config.hidden_size).
    "dbrx": dict(d_model=32, attn_config={"kv_n_heads": 2, "rope_theta": 10000.0, "clip_qkv": 8.0},
                 ffn_config={"ffn_hidden_size": 32, "moe_num_experts": 4, "moe_top_k": 2}),
    # 5.2x text models whose configs refuse or outgrow the tiny defaults: Dots3-Note's text model takes no grouped
    # heads; Ergo's first dense block is 32768 wide; Kolibri's indexer heads must fit a key head's 2 query heads (its
    # keys are rounded to NVFP4 in blocks of 16: heads of 16);
    # Inkling-2's head sizes and logits (200058 wide) are their own keys.
    "dots3_note_text": dict(num_key_value_heads=4),
    "ergo": dict(first_dense_intermediate_size=64, shared_intermediate_size=16, sliding_window=8),
    "kolibri1_1": dict(head_dim=16, index_num_heads=2, index_topk=4, index_pool_size=64, index_compression=2,
                       index_num_local_tokens=4, index_num_sink_tokens=2, sliding_window=8),
    "inkling2_text": dict(head_dim=8, swa_head_dim=8, swa_num_attention_heads=4, swa_num_key_value_heads=2,
                          unpadded_vocab_size=128, sliding_window_size=8),
    # Inkling-2-Loop runs its middle layers loop_num_passes times (layers 6 to 18 by default, in blocks of 6 for its
    # attention residuals; 128 experts and 24 sliding heads of 128: 7.3M parameters, "not built tiny" until session
    # 40): three layers, the middle one looped twice, blocks of one layer, Inkling-2's tiny head sizes.
    "inkling2_loop_text": dict(head_dim=8, swa_head_dim=8, swa_num_attention_heads=4, swa_num_key_value_heads=2,
                               unpadded_vocab_size=128, sliding_window_size=8, n_routed_experts=8,
                               num_experts_per_tok=2, loop_gate_rank=8, num_hidden_layers=3,
                               layer_types=["hybrid_sliding"] * 3, n_layers_per_attn_res_block=1,
                               loop_layer_index_start=1, loop_layer_index_end=2, loop_num_passes=2),
    # Dory loops its middle layers (8 input and 8 output layers by default, more than the tiny depth): one of each and
    # two looped twice, each loop with its own keys and values; a window of 8 on its sliding layers.
    "dory": dict(num_hidden_layers=4, n_input_layers=1, n_recurrent_layers=2, n_output_layers=1, n_recurrent_loops=2,
                 head_dim=8, sliding_window=8),
    # Sarvam-MLA: latent attention on DeepSeek-V3's code, whose keys have every query head (no grouped heads: the
    # default two key heads of the tiny config repeat them into a shape error), as DeepSeek-V3 here.
    "sarvam_mla": dict(num_key_value_heads=4),
    "qwen3": dict(head_dim=8),
    # CPM-Ant's prompt table (32 prompts of 32 types: 2.1M parameters with the tiny defaults; it reads the third
    # type's prompts and segment 2 for every token: 3 of each) and its attention's own head sizes.
    "cpmant": dict(prompt_length=4, prompt_types=3, segment_types=3, dim_ff=64, dim_head=8, num_heads=4,
                   position_bias_num_buckets=32, position_bias_max_distance=64),
    # Whisper's decoder alone (WhisperForCausalLM) keeps its head counts and widths per stack (6 heads do not divide
    # 32) and a decoder start token past a vocabulary of 128.
    "whisper": dict(d_model=32, encoder_layers=1, decoder_layers=2, encoder_attention_heads=2,
                    decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, decoder_start_token_id=1),
    # RoCBert's pronunciation and glyph-shape embeddings (910 x 768 and 24858 x 512 by default) alone are 13.5M
    # parameters: the bert-decoder kind left it out until they were tiny too.
    "roc_bert": dict(pronunciation_vocab_size=64, pronunciation_embed_dim=8, shape_vocab_size=64, shape_embed_dim=8),
    # GLM (4.46-4.4x) keeps head_dim 128 beside hidden / heads = 8: its partial rotary then ropes a 64-wide half of
    # 8-wide heads (a shape error in the first forward), so the 4.46.3 sweep never built it.
    "glm": dict(head_dim=8),
    "mistral": dict(head_dim=8),
    "cohere2": dict(head_dim=8),
    # Cohere-Compass reads its RoPE per layer type (KeyError 'full_attention' on the flat default); its text model
    # builds without mrope_section, [2, 1, 1] keeps its sections within a head of 8 (default [24, 20, 20] = 128).
    "cohere_compass_text": dict(rope_parameters={"full_attention": dict(rope_type="default", rope_theta=10000.0,
                                                                        mrope_section=[2, 1, 1])}),
    # head_dim None (no fallback to hidden / heads in the attention: None ** -0.5) or 128 (Helium: 8x512 vs 32x32).
    "ministral": dict(head_dim=8),
    "hunyuan_v1_dense": dict(head_dim=8),
    "hunyuan_v1_moe": dict(head_dim=8),
    "helium": dict(head_dim=8),
    # Mamba-2's heads x head size must equal expand x hidden (its defaults, 128 x 64, do not fit 32 wide); Zamba's
    # default layer pattern needs 3 layers (issue 36: the continuation scenarios run on both).
    "mamba2": dict(num_heads=8, head_dim=8, n_groups=1, expand=2),
    "zamba": dict(num_hidden_layers=3, use_mamba_kernels=False),  # 4.46-4.5x raise without the CUDA kernels
    # Zamba2: one Mamba layer and one hybrid (its default pattern is 54 layers), Mamba-2 heads of 8.
    # time_step_min 0.05 (default 0.001): a time-step floor the calibrated weights reach, so that a path that skips
    # it (model-zamba2-step-dt-limit: 5.24's decoding steps) is loud, not a 1e-6 difference under the tolerance.
    # HRM runs its stacks over H_cycles x (L_cycles + 1) passes (16 by default, one cache slot each): at the loud
    # continuation models' std that many passes amplify float32 rounding past the oracle's tolerance (1.3e-4 to
    # 5.4e-4 on second-turn, 5.24.0, where a cached forward is exact: 3e-15 in float64 with float64 norms). Two H
    # cycles of one L cycle, one layer per stack: 4 passes, the cycles and their cache slots still exercised.
    "hrm_text": dict(H_cycles=2, L_cycles=1, L_bp_cycles=[1], num_hidden_layers=1),  # 1 = per stack
    # DeepSeek's latent attention repeats its keys per head group, but every head has its own: as many key-value
    # heads as heads (4 of 2 gave a shape error in the first forward). Two experts per token (V2 has no default),
    # V3's group routing in 2 groups of the sweep's 8 experts, one group chosen (8 groups of 1 cannot give 2).
    "deepseek_v2": dict(num_key_value_heads=4, num_experts_per_tok=2),
    "deepseek_v3": dict(num_key_value_heads=4, n_group=2, topk_group=1),
    # dots1: experts, experts per token and shared experts default to None (torch.empty(None, ...) at build).
    "dots1": dict(n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1),
    # The same latent attention (4 of 2 heads: "tensor a (4) must match b (8)"); V3.2 and AXK1 route as V3 (8 groups of
    # 1 expert: "selected index k out of range"). LongCat-Flash sizes its RoPE by head_dim (64), not qk_rope_head_dim
    # (the sweep's 8).
    # V3.2's sparse indexer keeps its default top-k (2048: every token here) in this default layout; its selection
    # runs in the layout "deepseek_v32@selection" (LAYOUTS, below: session 31). With 4 (session 27) the selection
    # fell on ties and no-cache forwards were not causal. Session 29
    # (5.25.0, top-k 4, every scenario with the differential): causal-prefix holds (2.6e-06), every scenario but
    # one passes bitwise upstream's, and second-turn is 0.29 off both ways. Its cause is the tiny model, not a
    # cache: the first turn generates token 0, whose embedding row (padding_idx) is zero, so that query's index
    # scores are exactly 0 over every key and top-k picks among ties, differently in a decoding step and in the
    # no-cache forward (with ties broken by position, the scenario passes). A top-k below the prompt wants a tiny
    # model whose generated tokens never have a zero embedding: the layout has no padding_idx.
    "deepseek_v32": dict(num_key_value_heads=4, n_group=2, topk_group=1),
    "glm4_moe_lite": dict(num_key_value_heads=4),
    "glm_moe_dsa": dict(num_key_value_heads=4),
    "youtu": dict(num_key_value_heads=4),
    "axk1": dict(num_key_value_heads=4, n_group=2, topk_group=1),
    "axk2": dict(num_key_value_heads=4),
    "longcat_flash": dict(num_key_value_heads=4, head_dim=8),
    # DeepSeek-V4: heads of 512, 8 output groups of rank 1024 and a 64-head indexer leave 5.1M parameters after the
    # sweep's MoE sizes; one key-value head (its default). The indexer keeps its top-k (512: every token here).
    "deepseek_v4": dict(head_dim=8, num_key_value_heads=1, o_groups=2, o_lora_rank=16, index_n_heads=2,
                        index_head_dim=8),
    # MiniCPM3's latent attention as above; it divides the last hidden state by hidden / dim_model_base before the
    # head (2560 / 256 = 10 in the real model: logits scaled down), which at width 32 and base 256 multiplies the
    # logits by 8, and float32 rounding with them: 4.3e-4 on the loud model's second turn, a no-cache forward not
    # causal by 1.2e-4 (session 27, 5.25.0). A base of 32 makes the factor 1; rounding is then 5e-5 (settled in
    # float64: 4.8e-7).
    "minicpm3": dict(num_key_value_heads=4, dim_model_base=32),
    # Mamba-2 hybrids whose config checks its heads at construction (mamba_n_heads must divide expand x hidden:
    # 128 heads do not divide 64), before the sweep's state-space sizes could apply: never built until session 16.
    # Jamba's layers run without the CUDA kernels only when told.
    # Bamba and Jamba: one Mamba layer and one attention layer (their defaults put no attention in 2 layers).
    "bamba": dict(mamba_n_heads=8, mamba_d_head=8, attn_layer_indices=[1]),
    "granitemoehybrid": dict(mamba_n_heads=8, mamba_d_head=8, layer_types=["mamba", "attention"]),
    "jamba": dict(use_mamba_kernels=False, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2,
                  expert_layer_offset=1),
    # JetMoE's head size is kv_channels (default 128), but 4.56.0 ropes hidden_size / heads (8 here): with the default
    # the tiny model could not run a forward there, and recall missed model-jetmoe-static-cache on 4.56.0 (session
    # 31). Its probe builds the same size.
    "jetmoe": dict(kv_channels=8),
    "zamba2": dict(layers_block_type=["mamba", "hybrid"], mamba_headdim=8, n_mamba_heads=8, mamba_ngroups=1,
                   num_mem_blocks=1, time_step_min=0.05),
    # NemotronH: the same time-step floor for the same reason (model-nemotron-h-step-dt-limit, 5.15-5.24): at the
    # default 0.001 the skipped floor moves a cached generate() by 3e-6, under the tolerance, at 0.05 by 0.01-1.
    # Its layers: Mamba, experts, attention (the default adds an MLP layer, for which 5.14 and older have
    # no cache layer: KeyError 'mlp' in DynamicCache, so the sweep built no NemotronH there and missed its patches).
    "nemotron_h": dict(time_step_min=0.05, hybrid_override_pattern="ME*"),
    # xLSTM's layers size q/k/v by hidden x factor (16, 32) but its cache by that rounded up to 64 (64, 64): factors
    # of 2 make hidden x factor 64 already, so the two agree (else the cache state's shape error in the first forward).
    "xlstm": dict(qk_dim_factor=2.0, v_dim_factor=2.0),
    # LFM2-MoE has no default layer_types (None[i]): a conv layer then an attention one; its 2 dense layers would
    # leave no MoE layer in 2. LFM2's default for 2 layers is two attention layers, so its short convolution was
    # never run by the sweep (session 27): the same pattern.
    "lfm2_moe": dict(layer_types=["conv", "full_attention"], num_dense_layers=1),
    "lfm2": dict(layer_types=["conv", "full_attention"]),
    # Linear-attention hybrids: one full-attention layer in 4 (Bailing: in 6) leaves none in 2 ("get_mask_sizes can
    # only be called on Attention layers"): a linear layer then an attention one. Qwen4-Exp's attention is QSA-indexed
    # and needs the indexer's sizes (None // None); a budget of 8 in blocks of 4, so that it selects within the
    # prompts; head_dim 8 (default 256) fits the index head. Bailing's attention is latent (4 of 4 heads, as DeepSeek).
    "qwen3_next": dict(layer_types=["linear_attention", "full_attention"]),
    "qwen3_5_text": dict(layer_types=["linear_attention", "full_attention"]),
    "qwen3_5_moe_text": dict(layer_types=["linear_attention", "full_attention"]),
    "qwen4_exp_text": dict(layer_types=["linear_attention", "indexed_attention"], head_dim=8, indexer_n_heads=2,
                           indexer_kv_heads=1, indexer_head_dim=8, indexer_budget=8, indexer_compress_ratio=4),
    "bailing_hybrid": dict(layer_types=["linear_attention", "full_attention"], num_key_value_heads=4),
    # Kimi-Linear: the same pattern (its own: full attention at every 4th layer from the 5th); its KDA heads (32 of
    # 128) left 3.3M parameters; latent attention with as many key-value heads as heads, as DeepSeek's.
    "kimi_linear": dict(layer_types=["linear_attention", "full_attention"], linear_head_dim=8, linear_num_heads=4,
                        num_key_value_heads=4),
}


# Layouts: a second tiny model of a type, where one config knob gates a code path the first layout cannot run (the
# sweep builds both, as "<type>@<layout>"). Gemma-4's default tiny model is the large checkpoints' layout, with no
# KV-sharing layer (the one sliding-window-kv-shared-zero needs); its small checkpoints share the last layers' keys
# and values, whose uncached path 5.5.0-5.5.1 got wrong (model-gemma4-uncached-kv-sharing), unseen by the sweep until
# it built this layout too.
LAYOUTS: dict[str, tuple[str, dict[str, Any]]] = {
    "gemma4_text@shared-kv": ("gemma4_text", dict(
        num_hidden_layers=4, num_kv_shared_layers=2,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"])),
    # InklingText's tiny default makes every layer "hybrid_sliding" (linear + sliding attention); its "hybrid" layers
    # (linear + full attention: local_layer_ids=[]) keep a static cache of another class, whose query offset 5.14+
    # read wrong (model-inkling-static-query-offset): recall missed it on 5.14.1 until the sweep built this layout.
    "inkling_text@hybrid": ("inkling_text", dict(local_layer_ids=[])),
    # DeepSeek-V3.2's sparse indexer with a top-k below the prompts (4 of 7-19 tokens), so that its selection runs.
    # No padding_idx: token 0's zero embedding row gave a query index scores of exactly 0 over every key, and top-k
    # then picked among ties, differently in a decoding step and in the no-cache forward (session 29); the padded
    # scenarios mask their pads, whatever the pad's embedding.
    "deepseek_v32@selection": ("deepseek_v32", dict(index_topk=4, pad_token_id=None)),
    "glm_moe_dsa@selection": ("glm_moe_dsa", dict(index_topk=4, pad_token_id=None)),
}


def layouts_of(types: list[str]) -> list[str]:
    """``types`` with each one's extra layouts after it (those whose base type is among them)."""
    return [name for t in types for name in [t, *(n for n, (base, _) in LAYOUTS.items() if base == t)]]


def tiny_config(model_type: str, **overrides: Any) -> Any:
    """A config for ``model_type`` (or a layout of one, ``LAYOUTS``) small enough to run in milliseconds;
    ``overrides`` win."""
    from transformers import AutoConfig

    model_type, layout = LAYOUTS.get(model_type, (model_type, {}))
    values = dict(TINY_DEFAULTS)
    values.update(_PER_TYPE.get(model_type, {}))
    values.update(layout)
    values.update(overrides)
    values = {k: v for k, v in values.items() if v is not None}
    try:
        config = AutoConfig.for_model(model_type, **values)
    except (KeyError, ValueError) as exc:
        from transformers import CONFIG_MAPPING

        if model_type in CONFIG_MAPPING:  # the config refuses the tiny sizes: say which check, not "absent"
            raise ProbeSkipped(f"the tiny config of {model_type!r} is refused: {type(exc).__name__}: "
                               f"{str(exc)[:160]}") from exc
        raise ProbeSkipped(f"model type {model_type!r} is not in this transformers release") from exc
    # An expert config that keeps a hidden size of its own (DBRX's ffn_config on 5.0 to 5.x: 6144 by default; 4.x
    # refuses the key, later releases mirror d_model): the model's, or the experts do not fit the tiny model.
    experts = getattr(config, "ffn_config", None)
    if isinstance(getattr(experts, "hidden_size", None), int) and experts.hidden_size != config.hidden_size:
        experts.hidden_size = config.hidden_size
    # Eager attention everywhere unless asked (here or by ``precision(attn=...)``): the reference and the cached
    # path then take the same kernels.
    if "attn_implementation" not in overrides:
        try:
            config._attn_implementation = current().attn
        except Exception:  # noqa: BLE001 - older configs keep it as a plain attribute
            pass
    return config


def tiny_model(model_type: str, seed: int = 0, model_class: Any = None, **overrides: Any) -> Any:
    """A randomly initialised causal LM of ``model_type`` (eval mode, same weights for a seed), in the current
    ``precision()``: float32 on the CPU by default. The weights are drawn in float32 on the CPU and then cast, so
    a seed gives the same model, up to rounding, in every dtype and on every device."""
    import torch
    from transformers import AutoModelForCausalLM

    config = tiny_config(model_type, **overrides)

    def build() -> Any:
        torch.manual_seed(seed)
        # On the CPU whatever the default device: CUDA's generator would draw other weights for the seed.
        with torch.no_grad(), torch.device("cpu"):
            if model_class is not None:
                return model_class(config)
            try:
                return AutoModelForCausalLM.from_config(config)
            except ValueError as exc:
                if "attention implementation" in str(exc) or "attn_implementation" in str(exc):
                    raise
                raise ProbeSkipped(f"no causal LM class for {model_type!r} in this release") from exc

    try:
        model = build()
    except ValueError as exc:
        # A kernel asked for by precision(attn=...) that this architecture lacks (T5 has no sdpa up to 5.12):
        # the architecture runs eager, as transformers itself falls back when no kernel is named.
        if "attn_implementation" in overrides or current().attn == "eager":
            raise
        config._attn_implementation = "eager"
        model = build()
    draw_unwritten(model, seed)
    return cast(model.float())


def draw_unwritten(model: Any, seed: int) -> None:
    """Draw the parameters a release's init never writes. Llama-4's experts on 4.51 are ``torch.empty`` tensors that
    its ``_init_weights`` does not know: memory as found, NaN or 1e30 in some runs, so the tiny model gave NaN from
    its first forward (taken for a generate() defect) or nothing was wrong, by chance. A floating parameter with a
    non-finite value or a magnitude no init draws (over 1e4) is redrawn from the seed at std 0.02, the init's own
    scale; every other parameter is the release's."""
    import torch

    generator = torch.Generator().manual_seed(seed + 7919)
    with torch.no_grad():
        for param in model.parameters():
            if not param.is_floating_point() or param.numel() == 0:
                continue
            values = param.detach().float()
            if bool(torch.isfinite(values).all()) and float(values.abs().max()) <= 1e4:
                continue
            param.copy_(torch.randn(param.shape, generator=generator) * 0.02)


# -- calibration: loud tiny models (issue 36, section 2) --------------------------------------------------------
# transformers draws every weight with std ``initializer_range`` = 0.02. In a model 32 wide that makes each
# sub-layer's output ~0.02x the residual it joins and the logits' std ~0.11, so a defect in the attention (a wrong
# mask, a pad attended to, a position counted twice) moves a logit by 1e-3 or less (BLOOM's ALiBi: 2.9e-3 for the
# first token masked out; Gemma-2 with one pad attended: 3.4e-3) -- close to the oracle's tolerance, far from a
# clear error. The rule: rescale every dense weight to the variance-preserving std, 1/sqrt(fan_in), and every
# embedding table to std 1, so that each sub-layer's output is O(1) like the residual, attention is decisive and the
# logits' std is ~1. Float32 rounding grows with the logits but stays near 1e-6, while the same defects move a logit
# by 1e-2 to 4 (measured on 5.24.0, 11 decoder-only types: docs/matrix.md, "Loud tiny models"). The draw itself is the
# seed's (the tensors are scaled, not redrawn), so a seed still gives one model, and a 1-layer copy of the same
# seed keeps the target's first layer.
# float32, calibrated: a correct path stays under it. Largest measured: 8.1e-6 over the 1505 passes of the whole
# 5.24.0 sweep (nemotron / assisted; 1.4e-6 over 11 types' cached generate()): 2.5x margin, 5x under the tolerance.
ROUNDING = 2e-5
EMBEDDING_STD = 1.0


def calibrate(model: Any) -> Any:
    """``model`` with its dense weights rescaled to std 1/sqrt(fan_in) and its embedding tables to std 1 (the rule
    above), in place; weights that are constant (a zero init, a table of one row) or not trainable (sinusoidal
    positions) are left as they are."""
    import math

    import torch

    try:
        from transformers.pytorch_utils import Conv1D
    except ImportError:  # pragma: no cover - every supported release has it
        Conv1D = ()  # noqa: N806

    with torch.no_grad():
        for module in model.modules():
            weight = getattr(module, "weight", None)
            if not isinstance(weight, torch.Tensor) or weight.dim() != 2 or weight.numel() < 2:
                continue
            if not weight.requires_grad or "Sinusoidal" in type(module).__name__ or hasattr(module, "get_embedding"):
                # Fixed by definition, not drawn (FSMT's and Marian's sinusoidal positions): a model may compute it
                # again mid-run (FSMT does when the sequence outgrows it: 0.78 on s2s-uncached, 5.24.0, had it been
                # scaled), so a scaled copy would disagree with itself.
                continue
            if isinstance(module, torch.nn.Linear):
                target = 1 / math.sqrt(module.in_features)
            elif isinstance(module, Conv1D):  # GPT-2's layers: weight is (in, out)
                target = 1 / math.sqrt(weight.shape[0])
            elif isinstance(module, torch.nn.Embedding):
                target = EMBEDDING_STD
            else:
                continue
            std = float(weight.float().std())
            if std > 0 and math.isfinite(std):
                weight.mul_(target / std)
    return model
