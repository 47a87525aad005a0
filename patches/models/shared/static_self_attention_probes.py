"""The probe the encoder-decoder static-cache patches share: the sweep's s2s-static-cache scenario on a tiny model
(the defect and the correction: ``static_self_attention.py``)."""

from __future__ import annotations

from typing import Callable

from hf_genfix._patches.models.shared.static_self_attention import StaticCacheUnsupported


def prober(model_type: str) -> Callable[[], dict]:
    """``probe()``: the sweep's s2s-static-cache scenario on a tiny ``model_type``. With the patch, a release whose
    static layer cannot be masked refuses with ``StaticCacheUnsupported`` before the first token: loud, not silently
    wrong, which the probe reports as its figure ``refused``. A release where transformers itself raises on the
    scenario (4.55 refuses a static cache for these models; LED and MVP 5.4-5.12 fail with a TypeError; 5.4's MVP
    config does not build tiny) cannot run
    it: ``ProbeSkipped`` with upstream's exception, loud, never silently wrong."""

    def probe() -> dict:
        from hf_genfix.oracles import DefectObserved, ProbeSkipped
        from hf_genfix.oracles.sweep.families import Seq2SeqSubject, s2s_static_cache

        try:
            return s2s_static_cache(Seq2SeqSubject(model_type))
        except StaticCacheUnsupported:
            return {"refused": 1}
        except (DefectObserved, ProbeSkipped):
            raise
        except Exception as exc:  # noqa: BLE001 - transformers' own error on this release, kept as the reason
            raise ProbeSkipped(f"transformers raises on this scenario here: {type(exc).__name__}: "
                               f"{str(exc)[:160]}") from exc

    return probe
