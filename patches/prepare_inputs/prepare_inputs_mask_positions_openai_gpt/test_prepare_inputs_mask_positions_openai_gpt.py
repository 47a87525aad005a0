"""``prepare-inputs-mask-positions-openai-gpt``: the checks every patch owes (hf_genfix.testing.patches.PatchTests);
the padded and unpadded batches of the family's models: tests/prepare_inputs/test_mask_positions.py."""

from hf_genfix.testing.patches import PatchTests


class TestPatch(PatchTests):
    """``prepare-inputs-mask-positions-openai-gpt``: its probe proves it on this release; its plain program installs
    it."""
