"""The probe of ``decoding-assisted-recurrent-history`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

import warnings


def probe() -> dict:
    from transformers import cache_utils

    from hf_genfix.oracles import ProbeSkipped
    from hf_genfix.oracles.differential import refuses
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    if not hasattr(cache_utils.Cache, "get_recurrent_states_to_keep"):
        # before 5.25 a cache records no history, and assisted decoding refuses a stateful model in words
        raise ProbeSkipped("this release's caches record no recurrent history (assisted decoding refuses Mamba)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return SCENARIOS["prompt-lookup"](Subject("mamba"))
        except ValueError as exc:
            if refuses(str(exc)):
                raise ProbeSkipped(f"transformers refuses it: {exc}") from exc
            raise
