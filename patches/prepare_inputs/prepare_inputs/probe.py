"""The probe of ``prepare-inputs`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

from typing import Any


def probe() -> dict[str, Any]:
    from hf_genfix.oracles.decode import check_manual_loop, check_manual_seq2seq_loop

    # Llama shows the missing cache_position (<= 5.2) and the untrimmed ids (5.3+); gpt2, with absolute
    # positions, also the positions that ignore left padding (5.3+) and the mask never grown (every release);
    # T5 the encoder-decoder form (TypeError on 4.46 - 5.2, untrimmed decoder ids from 5.3).
    runs = [check_manual_loop("llama", grow_mask=True), check_manual_loop("gpt2", grow_mask=False)]
    import transformers

    # Known gap, measured by the matrix: on 4.49.x the T5 loop is wrong from its first (uncached) step, with
    # the patch as without it (diff 2.85; BART 0.0014): a 4.49 encoder-decoder defect this patch does not
    # correct (docs/prepare-inputs.md, "Not covered").
    if not transformers.__version__.startswith("4.49."):
        runs.append(check_manual_seq2seq_loop("t5"))
    return {"max_logit_diff": max(run["max_logit_diff"] for run in runs),
            "steps_compared": sum(run["steps_compared"] for run in runs)}
