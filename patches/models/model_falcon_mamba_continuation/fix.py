"""model-falcon-mamba-continuation: Falcon-Mamba's copy of Mamba's continuation defect (5.5.0-5.24.0): several tokens
after a cache restart the SSM scan from zeros, and generate() feeds a continued conversation again on top of the
state. The defect, its detection and its correction are ``model-mamba-continuation``'s (``FalconMambaMixer`` is
Mamba's mixer with weightless RMS norms on B, C and the time step); its own manifest because its own module. Measured:
second turn 0.209, reused prefix cache 0.521 without the patch, 1.9e-06 and 3.3e-06 with (5.24.0).
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import install_continuation

MODULE = "transformers.models.falcon_mamba.modeling_falcon_mamba"
MIXER = f"{MODULE}:FalconMambaMixer.forward"
BACKBONE = f"{MODULE}:FalconMambaModel.forward"
PREPARE = f"{MODULE}:FalconMambaForCausalLM.prepare_inputs_for_generation"


def install(patcher: Any) -> None:
    install_continuation(patcher, MIXER, BACKBONE, PREPARE)
