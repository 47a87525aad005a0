"""model-qwen3-5-moe-chunk-state: Qwen3.5-MoE's gated DeltaNet mixer restarts from zero states for several tokens after
a cache (a second turn from generate()'s returned cache, a reused prefix cache, a chunk): silently wrong.

The correction is shared with model-qwen3-next-chunk-state, model-qwen3-5-chunk-state:
``patches/models/shared/gated_deltanet_chunk_state.py``, whose docstring gives the defect, how it is detected and
the correction.
"""

from hf_genfix._patches.models.shared.gated_deltanet_chunk_state import NOT_BITWISE
from hf_genfix._patches.models.shared.gated_deltanet_chunk_state import install_qwen3_5_moe as install

__all__ = ["NOT_BITWISE", "install"]
