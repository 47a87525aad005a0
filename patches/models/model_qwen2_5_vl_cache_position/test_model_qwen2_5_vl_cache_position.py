"""``model-qwen2-5-vl-cache-position``: the checks every patch owes (hf_genfix.testing.patches.PatchTests)."""

from hf_genfix.testing.patches import PatchTests


class TestPatch(PatchTests):
    """``model-qwen2-5-vl-cache-position``: its probe proves it on this release; its plain program gets it installed."""
