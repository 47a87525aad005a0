"""The probe ``model-zamba2-chunk-scan`` and ``model-nemotron-h-chunk-scan`` share (the defect: ``mamba2_chunk_scan.py``).

The oracle is a definition: the result cannot depend on the chunk size. The reference is the same model with one
chunk covering the whole sequence (upstream's chunk path is right for one chunk from a zero state).
"""

from __future__ import annotations

from typing import Any

ROW = [17, 44, 91, 23, 5, 60, 12, 77, 30, 9, 3, 4, 8, 99]


def probe_chunk_scan(model_type: str, mixer: str, **overrides: Any) -> dict:
    """A loud tiny ``model_type`` with chunks of 4: a 14-token no-cache forward against one chunk, and a greedy cached
    ``generate()`` of a 10-token prompt, every step against the one-chunk no-cache forward."""
    import torch

    from hf_genfix.oracles import DefectObserved, ProbeSkipped, tolerance
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.reference import max_diff
    from hf_genfix.oracles.sweep.continuations import loud_model

    model = loud_model(model_type, chunk_size=4, **overrides)
    mixers = one_chunk(model, 0, mixer).mixers
    if not mixers or any(m.chunk_size != 4 for m in mixers):
        raise ProbeSkipped(f"the tiny {model_type} does not take chunk_size 4 here")
    ids = torch.tensor([ROW], device=model.device)
    with torch.no_grad():
        chunked = model(ids, use_cache=False).logits
        with one_chunk(model, ids.shape[1], mixer):
            whole = model(ids, use_cache=False).logits
    diff = max_diff(chunked, whole)
    if not diff <= tolerance():
        raise DefectObserved(f"{model_type}: a 14-token no-cache forward in chunks of 4 differs from one chunk by "
                             f"{diff:.3g} (the scan between chunks)", max_logit_diff=diff)
    rows = [ROW[:10]]
    run = generate_steps(model, *left_pad(rows), max_new_tokens=4, min_new_tokens=4, pad_token_id=0,
                         eos_token_id=None)
    with one_chunk(model, ids.shape[1], mixer):  # the reference: one chunk covers the whole sequence
        figures = check_rows_against_reference(model, rows, run,
                                               f"{model_type} (chunk 4): cached generate() of 10 tokens",
                                               eos_token_id=[])
    return dict(figures, chunks_vs_one=diff)


class one_chunk:
    """Inside the block every ``mixer`` (a class name) of ``model`` scans sequences of up to ``tokens`` in one chunk
    (the scan pads to a whole chunk and its intermediates grow with the square of the chunk: no larger)."""

    def __init__(self, model: Any, tokens: int, mixer: str):
        self.mixers = [m for m in model.modules() if type(m).__name__ == mixer]
        self.tokens = tokens

    def __enter__(self) -> "one_chunk":
        self.saved = [m.chunk_size for m in self.mixers]
        for m in self.mixers:
            m.chunk_size = self.tokens
        return self

    def __exit__(self, *exc: Any) -> None:
        for m, size in zip(self.mixers, self.saved):
            m.chunk_size = size
