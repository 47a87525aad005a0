"""``model-mvp-static-cache``: the checks every patch owes (hf_genfix.testing.patches.PatchTests)."""

from hf_genfix.testing.patches import PatchTests


class TestPatch(PatchTests):
    """``model-mvp-static-cache``: its probe proves it on this release; its plain program gets it installed."""
