"""``model-lfm2-moe-conv-continuation``: the checks every patch owes (hf_genfix.testing.patches.PatchTests)."""

from hf_genfix.testing.patches import PatchTests


class TestPatch(PatchTests):
    """``model-lfm2-moe-conv-continuation``: its probe proves it on this release; its plain program installs it."""
