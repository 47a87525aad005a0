"""``model-llava-next-legacy-decode-mask``: the checks every patch owes (hf_genfix.testing.patches.PatchTests); the padded
and unpadded batches of the three models: tests/models/test_llava_legacy_decode_mask.py."""

from hf_genfix.testing.patches import PatchTests


class TestPatch(PatchTests):
    """``model-llava-next-legacy-decode-mask``: its probe proves it on this release; its plain program installs it."""
