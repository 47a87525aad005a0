"""model-mamba-state-chunk: before 5.5 (4.56.2-5.4.0 measured), Mamba given a cache that already holds a state
and more than one token is silently wrong, and no correction is safe here: the patch refuses the call with a clear
error (from 5.5.0 ``model-mamba-continuation`` corrects it).

The defect. On 4.x and 5.0-5.4 (``MambaCache``; 5.5-5.16 keep the same two paths in the generic cache),
``MambaForCausalLM.forward`` documents ``cache_params`` as "the model uses the previous state ... as if
the model add state_input_ids + input_ids as context", but its mixer (``MambaMixer.slow_forward`` /
``cuda_kernels_forward``) only handles two cases: a prompt (``cache_position`` as long as the conv kernel: the
convolution restarts from zeros, overwriting the cached window) and one new token. Several tokens after a state --
``generate(prompt + next turn, cache_params=cache)`` (the model's own cache argument, the only one it takes on 4.x;
generate() then feeds the whole conversation at positions 0..n-1 on top of the state), or a chunk through
``forward(chunk, cache_params=cache, cache_position=...)`` -- come out silently wrong. Measured on the hunt's loud
tiny Mamba (std 0.3, state 8, conv 4) on 4.57.6: generate() continuing a forward's cache_params 6.28 (one row) and
7.48 (left-padded batch of 3); a 5-token chunk after a cache 7.97 (max |logit diff| against a no-cache forward).
The probe's figure is 4.08 on 4.56.2, 4.57.6 and 5.0.0, 1.96 on 5.5.0, 4.03 on 5.13.0, 0.55 on 5.15.0.

Why a refusal. A correction would have to rebuild the conv window and the scan's start on the 4.x ``MambaCache``
(fixed-size tensors, one ``cache_position`` convention per path, a CUDA kernel path not run here; the code changed
three times in this range) and tell generate() which of the ids the state has seen, which the cache does not record.
A loud error is never worse than a silently wrong answer, and every call upstream gets right (a prompt, one token at
a time, a cache without a state) is untouched.

Detection. ``probe()``: a loud tiny Mamba, a 10-token prompt run with ``use_cache=True``, then ``generate(prompt +
3 tokens, cache_params=deepcopy(cache))``: with the patch it raises ``MambaStateChunkUnsupported`` (the probe
passes), without it the steps differ from a no-cache forward.

Correction. ``MambaForCausalLM.forward`` is wrapped: given ``cache_params`` that holds a state (``has_previous_state``
from 5.5, an SSM state not all zeros before) and more than one token, it raises ``MambaStateChunkUnsupported``
naming the model, the release and ``HF_GENFIX_MODEL_MAMBA_STATE_CHUNK=off``.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.mamba_state_chunk import MambaStateChunkUnsupported, install_refusal

PATCH = "model-mamba-state-chunk"
FORWARD = "transformers.models.mamba.modeling_mamba:MambaForCausalLM.forward"


def install(patcher: Any) -> None:
    install_refusal(patcher, FORWARD, PATCH)
