"""``model-qwen3-5-chunk-state``: the checks every patch owes (hf_genfix.testing.patches.PatchTests)."""

from hf_genfix.testing.patches import PatchTests


class TestPatch(PatchTests):
    """``model-qwen3-5-chunk-state``: its probe proves it on this release; its plain program gets it installed."""
