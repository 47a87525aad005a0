"""The probe of ``decoding-given-cache-use-cache`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

import functools


def probe() -> dict:
    from hf_genfix.oracles import DefectObserved, ProbeSkipped
    from hf_genfix.oracles.sweep import SCENARIOS, Subject
    from hf_genfix.oracles.sweep.continuations import loud

    subject = Subject("mpt")
    try:
        return SCENARIOS["prefix-reuse"](subject)
    except (DefectObserved, ProbeSkipped):
        raise  # 5.2+: silently wrong from the second step
    except Exception as exc:  # noqa: BLE001 - this defect's loud form, or another failure: the flag decides
        # 4.54-5.1 raise on the second step (its ids against a mask of the whole sequence). The defect is what the
        # generation config's use_cache=False does to a given cache: the same call with use_cache=True (the
        # caller's own workaround) must be right, else the call fails for another reason.
        model = loud(subject)  # the scenario's model (its loud copy, built once per subject)
        model.generate = functools.partial(type(model).generate, model, use_cache=True)
        try:
            SCENARIOS["prefix-reuse"](subject)
        except Exception as other:  # noqa: BLE001 - it fails another way too (4.53's MPT cache): not this defect
            raise ProbeSkipped(f"the call fails with use_cache=True too: {type(other).__name__}: "
                               f"{str(other)[:120]}") from exc
        finally:
            del model.generate
        raise DefectObserved(f"generate() given a prefix cache raises {type(exc).__name__}: {str(exc)[:160]}, where "
                             f"the same call with use_cache=True is right") from exc
