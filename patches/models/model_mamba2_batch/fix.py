"""model-mamba2-batch: on 4.46-4.47, Mamba-2's torch path (no CUDA kernels: every CPU, a GPU without mamba-ssm) gets
a batch of several rows wrong, and no correction is safe there: the patch refuses a batch that continues a cached
state with a clear error.

The defect. ``Mamba2Mixer.torch_forward`` has two paths. Its one-token path (a cached decoding step) broadcasts the
time step and gate of a batch against its own rows (``[b, 1, n] x [b, n] -> [b, b, n]``): with one row that is the
right product, with several every row mixes in the others', and the output grows by ``b`` positions a step. Its chunk
path sums the state between chunks over the wrong axis (``model-mamba2-chunk-scan``), which that patch corrects by
feeding the tokens past the first chunk through the one-token path, for a batch of one row only. So a batch's prompt
longer than ``chunk_size`` (256 by default), every batched cached decoding step, and several tokens after a batch's
cache are silently wrong. Measured on the loud tiny Mamba-2 (chunk 4): a cached generate() on a batch of two 6-token
rows is 0.0748 off at its first step on 4.46.3 and 4.47.1 (each row alone: 9.5e-07). 4.48.0 rewrote the mixer.

Why a refusal. A correction would have to run each row through the one-token path against its own slice of the
release's ``Mamba2Cache`` (fixed-size tensors, its ``seqlen_offset`` shared by the batch), which upstream never does,
for two releases that newer ones replaced. A loud error is never worse than a silently wrong answer. Only what
continues a cached state is refused (every batched cached decoding step, a chunk after a batch's cache): so a
batched cached generate() is refused at its first decoding step. A batch without a cached state is upstream's: one
within a chunk is right; one past it (a no-cache forward, ``generate(use_cache=False)``) is wrong but left to
upstream, as refusing a plain forward would stop training and scoring code that calls the model directly (on file
in ``patches/open-findings.json``). One row is upstream's, or ``model-mamba2-chunk-scan``'s.

Detection. ``probe()``: the loud tiny Mamba-2, cached greedy generate() on an unpadded batch of two rows of 6 tokens:
with the patch it raises ``Mamba2BatchUnsupported`` (the probe passes); without it the first step already differs
from each row's no-cache forward.

Correction. ``Mamba2Mixer.torch_forward`` is wrapped, outside ``model-mamba2-chunk-scan``'s wrapper: a batch of more
than one row fed after a cached state (``Mamba2Cache.seqlen_offset`` > 0) raises ``Mamba2BatchUnsupported`` naming
the release and ``HF_GENFIX_MODEL_MAMBA2_BATCH=off``. The CUDA kernels' path is not wrapped.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import signature

PATCH = "model-mamba2-batch"
TARGET = "transformers.models.mamba2.modeling_mamba2:Mamba2Mixer.torch_forward"


class Mamba2BatchUnsupported(RuntimeError):
    """A batch of several rows on Mamba-2's torch path where this release gets it wrong (4.46-4.47)."""


def install(patcher: Any) -> None:
    patcher.require(TARGET, "input_states", "cache_params")
    patcher.wrap(TARGET, _torch_forward)


def _torch_forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    bound = signature(wrapped).bind(*args, **kwargs)
    hidden = bound.arguments["input_states"]
    rows, n = hidden.shape[0], hidden.shape[1]
    if rows == 1:
        return wrapped(*args, **kwargs)
    cache = bound.arguments.get("cache_params")
    if cache is None or int(getattr(cache, "seqlen_offset", 0) or 0) <= 0:
        # No cached state: a prompt, or a forward without a cache. Within one chunk upstream is right; past it the
        # scan between chunks is wrong for a batch too, but a plain forward (training, scoring) is left as it is
        # rather than refused: on file in patches/open-findings.json.
        return wrapped(*args, **kwargs)
    import transformers

    what = "a decoding step" if n == 1 else f"{n} tokens"
    raise Mamba2BatchUnsupported(
        f"Mamba2ForCausalLM without the CUDA kernels: a batch of {rows} rows ({what} after a cached state) is "
        f"silently wrong on "
        f"transformers {transformers.__version__} (the torch path mixes a batch's rows in its one-token step and "
        f"scans chunks over the wrong axis), and hf_genfix cannot correct it safely on this release. Run one row at "
        f"a time, upgrade to transformers 4.48 or later, or set HF_GENFIX_MODEL_MAMBA2_BATCH=off to get upstream's "
        f"behaviour.")
