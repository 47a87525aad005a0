"""The probe of ``sliding-window-static-chunk`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    """Chunked forwards through a static sliding cache against the no-cache forward (tiny Mistral, W = 8)."""
    import torch

    from hf_genfix.oracles import tiny_model
    from hf_genfix.oracles.sliding_static import WINDOW, check_chunks, static_cache

    model = tiny_model("mistral", sliding_window=WINDOW)
    ids = torch.randint(3, 128, (24,), generator=torch.Generator().manual_seed(0), device="cpu").tolist()
    try:
        # 5 (prefill) + 6 crosses the window, + 4 on a full window, then single tokens.
        return check_chunks(model, ids, (5, 6, 4), static_cache(model, 1, 32), "static sliding cache")
    except (IndexError, RuntimeError) as exc:
        from hf_genfix.oracles import DefectObserved

        raise DefectObserved(f"chunked forward through a static sliding cache raised {type(exc).__name__}: "
                             f"{exc}") from exc
