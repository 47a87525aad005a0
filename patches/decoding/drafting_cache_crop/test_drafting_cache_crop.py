"""drafting-cache-crop: assisted decoding keeps the drafter's cache at the accepted length, on the installed release.

With hf_genfix active (its patches decided for this release): tiny Llama and Qwen2 targets, drafts of 2 to 6
tokens from a second random model (every draft rejected: the cache must be rewound each round) and from a copy of
the target (every draft accepted: nothing to rewind), give plain greedy's tokens, logits equal to a no-cache
forward, and a drafter cache that at every forward holds exactly the tokens before the ones it is fed
(``oracles.drafting.check_assisted``). On 5.15.x this holds only with the patch; its probe
(its PatchTests.test_probe_proves_the_patch) shows the defect without it. The sliding-window case checks that the patch stacks with
``sliding-window-draft-keys`` (both wrap neighbouring code on 5.15).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import hf_genfix  # noqa: E402
from hf_genfix.oracles import ProbeSkipped, tiny_model  # noqa: E402
from hf_genfix.oracles import sliding as sw  # noqa: E402
from hf_genfix.oracles.drafting import check_assisted  # noqa: E402
from hf_genfix.testing.patches import PatchTests  # noqa: E402

pytestmark = pytest.mark.usefixtures("patches_decided")  # every patch decided before each test


@pytest.fixture(autouse=True)
def patches_decided():
    from hf_genfix.doctor import import_targets

    import_targets()


def _release():
    from packaging.version import Version

    return Version(Version(transformers.__version__).base_version)


def _check(target, drafter, row, new, draft, what):
    try:
        return check_assisted(target, drafter, row, new, draft, what)
    except ProbeSkipped as exc:
        pytest.skip(str(exc))


CASES = [("llama", 2), ("llama", 3), ("llama", 4), ("llama", 6), ("qwen2", 4)]


@pytest.mark.parametrize("drafter_seed", [1, 0], ids=["rejected", "accepted"])
@pytest.mark.parametrize("arch,draft", CASES, ids=[f"{a}-draft{d}" for a, d in CASES])
def test_assisted_decoding_matches_greedy_and_keeps_the_drafter_cache(arch, draft, drafter_seed):
    target, drafter = tiny_model(arch), tiny_model(arch, seed=drafter_seed)
    figures = _check(target, drafter, sw.prompts(12)[0], 16, draft, f"{arch} assisted, {draft}-token drafts")
    assert figures["tokens"] == 28 and figures["max_logit_diff"] <= 1e-4
    assert figures["drafter_forwards"] >= 16 // draft  # one cached drafter forward per round at least


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_stacks_with_sliding_window_draft_keys(attn):
    from packaging.version import Version

    if not Version("5.15.0") <= _release() < Version("5.16.0"):
        pytest.skip("the two patches overlap on 5.15.x only (drafting-cache-crop: measured 5.15.0 and 5.15.1; "
                    "5.14.x and 5.16.x crop the drafter right); tests/sliding_window covers sliding drafts elsewhere")
    states = {s.id: s.state for s in hf_genfix.status()}
    assert states["drafting-cache-crop"] == states["sliding-window-draft-keys"] == "applied"
    target = sw.sliding_model("mistral", attn)
    drafter = sw.sliding_model("mistral", attn, seed=1)
    figures = _check(target, drafter, sw.prompts(12)[0], 2 * sw.WINDOW, 5,
                     f"mistral ({attn}, window {sw.WINDOW}) assisted, 5-token drafts")
    assert figures["tokens"] == 12 + 2 * sw.WINDOW and figures["max_logit_diff"] <= 1e-4


class TestPatch(PatchTests):
    """``drafting-cache-crop``: its probe proves it on this release; its plain program gets it installed."""
