"""``model-gemma4-uncached-kv-sharing``: the checks every patch owes (hf_genfix.testing.patches.PatchTests)."""

from hf_genfix.testing.patches import PatchTests


class TestPatch(PatchTests):
    """``model-gemma4-uncached-kv-sharing``: its probe proves it on this release; its plain program installs it."""
