"""``sliding-window-cohere2-decode-mask``: the checks every patch owes (hf_genfix.testing.patches.PatchTests)."""

from hf_genfix.testing.patches import PatchTests


class TestPatch(PatchTests):
    """``sliding-window-cohere2-decode-mask``: its probe proves it on this release; its plain program gets it installed."""
