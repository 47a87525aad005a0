"""The probe of ``sliding-window-image-index-gemma3``: the static-cache forward it shares with
sliding-window-image-static-gemma3 and -gemma4 (``patches/sliding_window/shared/image_static_probes.py``), then a
second image turn that continues from the returned cache.

Both read ``token_type_ids`` at positions past the ids the mask function is given: a static cache's key slots on
4.53, and on 4.53-4.56 the absolute query positions of tokens fed after a cache (a second turn's 5 new tokens sit
at positions 25-29: ``IndexError: index 27 is out of bounds for dimension 1 with size 5``).
"""

from __future__ import annotations

import warnings

from hf_genfix._patches.sliding_window.shared.image_static_probes import probe_gemma3


def probe() -> dict:
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.sweep import SCENARIOS
    from hf_genfix.oracles.sweep.families import ImageTextSubject

    figures = probe_gemma3()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        subject = ImageTextSubject("gemma3")
        try:
            turn = SCENARIOS["image-second-turn-padded"](subject)
        except IndexError as exc:
            raise DefectObserved(f"Gemma-3, a second image turn from out.past_key_values: IndexError: {exc}") from exc
        except ValueError as exc:
            if "do not match" not in str(exc):
                raise
            # 5.0-5.12: the second turn feeds the image's pixels again and upstream refuses them in words (loud, the
            # sweep's upstream-error): not this defect, and nothing of it to measure here.
            return figures
    return {"max_logit_diff": max(figures["max_logit_diff"], turn["max_logit_diff"]),
            "static_cache": figures["max_logit_diff"], "second_turn": turn["max_logit_diff"]}
