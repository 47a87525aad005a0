"""The probe of ``model-zamba2-chunk-scan`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict:
    import torch

    from hf_genfix.oracles import DefectObserved, ProbeSkipped, tolerance
    from hf_genfix.oracles.generation import check_rows_against_reference, generate_steps, left_pad
    from hf_genfix.oracles.reference import max_diff
    from hf_genfix.oracles.sweep.continuations import loud_model

    model = loud_model("zamba2", chunk_size=4, use_mem_rope=True)
    mixers = one_chunk(model, 0).mixers
    if not mixers or any(m.chunk_size != 4 for m in mixers):
        raise ProbeSkipped("the tiny Zamba2 does not take chunk_size 4 here")
    ids = torch.tensor([[17, 44, 91, 23, 5, 60, 12, 77, 30, 9, 3, 4, 8, 99]], device=model.device)
    with torch.no_grad():
        chunked = model(ids, use_cache=False).logits
        with one_chunk(model, ids.shape[1]):
            whole = model(ids, use_cache=False).logits
    diff = max_diff(chunked, whole)
    if not diff <= tolerance():
        raise DefectObserved(f"zamba2: a 14-token no-cache forward in chunks of 4 differs from one chunk by "
                             f"{diff:.3g} (the scan between chunks)", max_logit_diff=diff)
    rows = [ids[0, :10].tolist()]
    run = generate_steps(model, *left_pad(rows), max_new_tokens=4, min_new_tokens=4, pad_token_id=0,
                         eos_token_id=None)
    with one_chunk(model, ids.shape[1]):  # the reference: one chunk covers the whole sequence, the path upstream gets right
        figures = check_rows_against_reference(model, rows, run, "zamba2 (chunk 4): cached generate() of 10 tokens",
                                               eos_token_id=[])
    return dict(figures, chunks_vs_one=diff)


class one_chunk:
    """Inside the block every Zamba2 mixer of ``model`` scans sequences of up to ``tokens`` in one chunk (the scan
    pads to a whole chunk and its intermediates grow with the square of the chunk: no larger)."""

    def __init__(self, model: Any, tokens: int):
        self.mixers = [m for m in model.modules() if type(m).__name__ == "Zamba2MambaMixer"]
        self.tokens = tokens

    def __enter__(self) -> "one_chunk":
        self.saved = [m.chunk_size for m in self.mixers]
        for m in self.mixers:
            m.chunk_size = self.tokens
        return self

    def __exit__(self, *exc: Any) -> None:
        for m, size in zip(self.mixers, self.saved):
            m.chunk_size = size
