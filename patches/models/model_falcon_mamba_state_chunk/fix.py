"""model-falcon-mamba-state-chunk: Falcon-Mamba's copy of ``model-mamba-state-chunk`` (its mixer is Mamba's, with
weightless RMS norms): before 5.5, several tokens after a cache_params that holds a state are silently wrong, and the
patch refuses the call with a clear error naming ``HF_GENFIX_MODEL_FALCON_MAMBA_STATE_CHUNK=off``. The defect, why a
refusal, the detection and the refusal are that patch's; its own manifest because its own module.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.mamba_state_chunk import install_refusal

PATCH = "model-falcon-mamba-state-chunk"
FORWARD = "transformers.models.falcon_mamba.modeling_falcon_mamba:FalconMambaForCausalLM.forward"


def install(patcher: Any) -> None:
    install_refusal(patcher, FORWARD, PATCH)
