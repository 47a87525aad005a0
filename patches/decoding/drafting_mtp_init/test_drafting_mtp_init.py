"""drafting-mtp-init: Gemma-4 multi-token-prediction decoding runs and equals plain greedy, on the installed release.

With hf_genfix active: a tiny Gemma-4 text model (KV-shared layout) and a tiny Gemma-4 assistant, 1- and 3-token
drafts, inside the window: plain greedy's tokens and logits equal to a no-cache forward, the assistant having
drafted. On 5.18.0 and 5.19.0 generate() raises TypeError before decoding without the patch (its probe, in
its PatchTests.test_probe_proves_the_patch, shows it). Releases without a Gemma-4 assistant, or that cannot build one (5.23.0), skip
with the reason.
"""

from __future__ import annotations

import inspect

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hf_genfix.oracles import ProbeSkipped  # noqa: E402
from hf_genfix.oracles import sliding as sw  # noqa: E402
from hf_genfix.oracles.drafting import forward_calls  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


@pytest.mark.parametrize("draft", [1, 3])
def test_mtp_decoding_matches_greedy(draft):
    try:
        target = sw.sliding_model("gemma4-shared-kv", window=64)
        drafter = sw.gemma4_drafter(target, window=64)
        with forward_calls(drafter) as calls:
            figures = sw.check_same_as_greedy(target, sw.prompts(12, seed=2)[0], 10,
                                              f"gemma4 MTP, {draft}-token drafts", **sw.drafting(drafter, draft))
    except ProbeSkipped as exc:
        pytest.skip(str(exc))
    assert figures["tokens"] == 22 and figures["max_logit_diff"] <= 1e-4
    assert calls, "the assistant never drafted"


def test_the_wrapped_constructor_keeps_its_signature():
    import hf_genfix

    if next(s for s in hf_genfix.status() if s.id == "drafting-mtp-init").state != "applied":
        pytest.skip("drafting-mtp-init is not applied on this release (measured: only 5.18.0 and 5.19.0 need it)")
    from transformers.generation.candidate_generator import SinglePositionMultiTokenCandidateGenerator as cls

    assert inspect.signature(cls.__init__) == inspect.signature(cls.__init__.__wrapped__)
    assert {"input_ids", "model_kwargs"} <= set(inspect.signature(cls.__init__).parameters)


class TestPatch(PatchTests):
    """``drafting-mtp-init``: its probe proves it on this release; its plain program gets it installed."""
