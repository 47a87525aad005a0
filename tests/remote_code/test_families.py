"""Old trust_remote_code models of five families (our tiny repos using their API patterns, see
``hf_genfix.oracles.legacy_models``) load and generate on every release with hf_genfix, and fail without it
exactly on the releases measured.

Oracle (``check_family``): greedy ``generate()`` on a batch (left-padded, equal lengths for chatglm3) equals
greedy decoding by full no-cache forwards of each unpadded row, and after the prefill every forward receives one
new token and a cache holding the sequence so far.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_genfix.oracles.legacy_models import FAMILIES  # noqa: E402

# Releases on which the family fails without hf_genfix (measured 4.40.2 .. 5.24.0; docs/remote-code.md).
FAILS_WITHOUT = {
    "phi3": ">=4.49.0",
    "deepseek": ">=4.49.0",
    "minicpm": ">=4.49.0",
    "internlm2": ">=4.56.0",
    "chatglm3": ">=4.44.0",
}
# Every patch these models rely on (legacy-cache: their 4.40-style prepare_inputs_for_generation).
REMOTE_PATCHES = (
    "legacy-cache", "remote-code-cache-api", "remote-code-attn-mask-utils", "remote-code-removed-names",
    "remote-code-rope-scaling", "remote-code-model-methods", "remote-code-extract-past",
    "remote-code-config-defaults", "remote-code-num-hidden-layers", "remote-code-update-kwargs",
)


@pytest.fixture(scope="module", autouse=True)
def decided():
    from hf_genfix.cli import load_targets

    load_targets()  # every patch decided before the first remote class is created


@pytest.mark.parametrize("family", FAMILIES)
def test_family_generates_like_the_reference_with_hf_genfix(family, tmp_path):
    from hf_genfix.oracles.legacy_models import check_family

    figures = check_family(family, tmp_path)
    assert figures["forwards"] == 4  # prefill + 3 decode steps, one token each


@pytest.mark.parametrize("family", FAMILIES)
def test_without_hf_genfix_the_family_fails_exactly_where_measured(family, tmp_path):
    import hf_genfix
    from hf_genfix._registry import in_range, transformers_version
    from hf_genfix.oracles import DefectObserved
    from hf_genfix.oracles.legacy_models import check_family

    with hf_genfix.disabled(*REMOTE_PATCHES):
        if in_range(FAILS_WITHOUT[family], transformers_version()):
            with pytest.raises(DefectObserved):
                check_family(family, tmp_path)
        else:
            check_family(family, tmp_path)


def test_remote_patches_exist():
    from hf_genfix._manifest import load_dir

    ids = {m.id for m in load_dir()}
    assert set(REMOTE_PATCHES) <= ids
