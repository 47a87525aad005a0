"""``model-mamba2-chunk-scan``: the checks every patch owes (hf_genfix.testing.patches.PatchTests)."""

from hf_genfix.testing.patches import PatchTests


class TestPatch(PatchTests):
    """``model-mamba2-chunk-scan``: its probe proves it on this release; its plain program gets it installed."""
