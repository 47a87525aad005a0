"""prepare-inputs-mask-positions-ctrl: CTRL before 5.1 gives generate() a left-padded row's pads as positions (and
before 4.57 drops the attention mask): every left-padded batch is silently wrong (0.209 on 4.47.0 and 0.247 on 4.57.6
on the sweep's tiny model, the first generated token; 5.1 dropped the override).

The defect and the correction are the family's: ``prepare_inputs/shared/mask_positions.py``. Detection
(``probe``): a left-padded batch of rows of 7, 3 and 10 tokens, greedy ``generate()`` against a no-cache forward of
each unpadded row.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.prepare_inputs.shared import mask_positions

TARGET = "transformers.models.ctrl.modeling_ctrl:CTRLLMHeadModel.prepare_inputs_for_generation"


def install(patcher: Any) -> None:
    mask_positions.install(patcher, TARGET, __name__)
