"""``sliding-window-draft-keys``: multi-token drafts run past the window; never a silently wrong draft instead of
upstream's crash.

Where the patch is applied (5.15-5.17): InklingText, whose 'hybrid_sliding' layers also record short-convolution
states, keeps upstream's RuntimeError with 4-token drafts (cutting its keys alone returned wrong logits, 0.00424 on
5.16.1, with drafting-crop-length-tensor off). The probe (Mistral, Gemma-2) is ``TestPatch``'s.
"""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import ProbeSkipped  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

PID = "sliding-window-draft-keys"


def _outcome(scenario, subject):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "pass", scenario(subject)["max_logit_diff"]
        except Exception as exc:  # noqa: BLE001 - compared below
            return type(exc).__name__, str(exc)[:80]


def test_a_layer_with_linear_attention_states_keeps_upstreams_error(require_applied):
    from hf_genfix.oracles.sweep import SCENARIOS, Subject

    require_applied(PID)
    try:
        subject = Subject("inkling_text")
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    ours = _outcome(SCENARIOS["assisted-4-tokens"], subject)
    with hf_genfix.disabled(PID):
        theirs = _outcome(SCENARIOS["assisted-4-tokens"], subject)
    assert ours[0] != "DefectObserved", ours
    if theirs[0] != "pass":
        assert ours[0] == theirs[0], (ours, theirs)


class TestPatch(PatchTests):
    """``sliding-window-draft-keys``: its probe proves it on this release; its plain program gets it installed."""
