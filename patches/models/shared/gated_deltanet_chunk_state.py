"""model-qwen3-next-chunk-state / model-qwen3-5-chunk-state / model-qwen3-5-moe-chunk-state (one patch per model, one
fix): the Qwen gated DeltaNet mixers restart from zero states for several tokens after a cache, so a second turn from
generate()'s returned cache, a reused prefix cache and a chunk after a cache are silently wrong (Qwen3-Next 4.57.0,
where it first ships, to 5.6.2; Qwen3.5 and Qwen3.5-MoE 5.2.0, where they first ship, to 5.6.2; 5.7.0 fixed all three).

The defect. ``Qwen3NextGatedDeltaNet.forward`` (and Qwen3.5's, Qwen3.5-MoE's, generated from it) takes its decoding
path (``use_precomputed_states``: the cached conv window and recurrent state) only for one token. A chunk after a
state goes through the prefill path, which pads its short convolution with zeros and runs ``chunk_gated_delta_rule``
with ``initial_state=None``: everything the linear layers remembered is lost, and the chunk's outputs and the states
it leaves are computed as if the conversation started there. Found once the sweep could build these models tiny (one
linear and one full-attention layer: with their default patterns two layers hold no attention layer; session 27):
Qwen3-Next second-turn 0.506 and chunk-after-cache 0.612 on 4.57.6, 1.5 and 0.255 on 5.2.0; Qwen3.5 0.765 and 0.231,
Qwen3.5-MoE 0.942 and 0.197 on 5.2.0. 5.7.0 continues the cached states in the chunk path, as it did for OlmoHybrid
(``model-olmo-hybrid-chunk-state``, a mixer that kept the recurrent state and lost only the conv window).

Detection. Each patch's ``probe()``: a first turn generated, then a second turn of three more tokens continuing from
the returned cache, every step against a no-cache forward of the conversation (the loud tiny model of the
continuation probes).

Correction. The models family's ``ssm_continuation.split_after_state`` (Jamba's, Bamba's, OlmoHybrid's): a chunk after
this layer's state goes through upstream's own one-token path, one token at a time. A prompt, one token and a chunk
whose mask has zeros are upstream's.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import SPLIT_NOT_BITWISE, install_continuation

MIXERS = {
    "qwen3_next": "transformers.models.qwen3_next.modeling_qwen3_next:Qwen3NextGatedDeltaNet.forward",
    "qwen3_5": "transformers.models.qwen3_5.modeling_qwen3_5:Qwen3_5GatedDeltaNet.forward",
    "qwen3_5_moe": "transformers.models.qwen3_5_moe.modeling_qwen3_5_moe:Qwen3_5MoeGatedDeltaNet.forward",
}
# The one-token path token by token, where upstream runs the chunk kernel: other float operations.
NOT_BITWISE = SPLIT_NOT_BITWISE


def install_qwen3_next(patcher: Any) -> None:
    install_continuation(patcher, MIXERS["qwen3_next"])


def install_qwen3_5(patcher: Any) -> None:
    install_continuation(patcher, MIXERS["qwen3_5"])


def install_qwen3_5_moe(patcher: Any) -> None:
    install_continuation(patcher, MIXERS["qwen3_5_moe"])
