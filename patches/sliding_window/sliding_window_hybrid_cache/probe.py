"""The probe of ``sliding-window-hybrid-cache`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    """Greedy generation with cache_implementation="sliding_window" on a tiny Gemma-2 against the no-cache
    forward."""
    import torch

    from hf_genfix.oracles import ProbeSkipped, check_rows_against_reference, generate_steps, left_pad, tiny_model
    from hf_genfix.oracles.sliding_static import WINDOW

    model = tiny_model("gemma2", sliding_window=WINDOW)
    rows = [torch.randint(3, 128, (12,), generator=torch.Generator().manual_seed(0),
                          device="cpu").tolist()]
    ids, mask = left_pad(rows)
    try:
        run = generate_steps(model, ids, mask, max_new_tokens=6, cache_implementation="sliding_window",
                             eos_token_id=None, pad_token_id=0)
    except ValueError as exc:
        if "sliding_window" in str(exc):  # a release that no longer knows the name
            raise ProbeSkipped(f'cache_implementation="sliding_window" is refused: {exc}') from exc
        raise
    except RuntimeError as exc:
        # 4.49-4.52: the full-attention layers' sliding cache holds WINDOW keys while their mask spans the whole
        # prompt, so the same defect shows as a crash instead of wrong logits.
        if "must match the size" not in str(exc):
            raise
        from hf_genfix.oracles import DefectObserved

        raise DefectObserved(f'generate(cache_implementation="sliding_window") on Gemma-2 crashes: {exc}') from exc
    return check_rows_against_reference(model, rows, run, 'generate(cache_implementation="sliding_window")',
                                        eos_token_id=[])
