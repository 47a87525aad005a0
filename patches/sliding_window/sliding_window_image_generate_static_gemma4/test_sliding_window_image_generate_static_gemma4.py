"""``sliding-window-image-generate-static-gemma4``: the checks every patch owes (hf_genfix.testing.patches.PatchTests)."""

from hf_genfix.testing.patches import PatchTests


class TestPatch(PatchTests):
    """``sliding-window-image-generate-static-gemma4``: its probe proves it on this release; its plain program gets it installed."""
