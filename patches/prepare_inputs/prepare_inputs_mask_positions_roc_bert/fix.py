"""prepare-inputs-mask-positions-roc-bert: RoCBert before 5.0 gives generate() a left-padded row's pads as
positions: every left-padded batch of its decoder (``is_decoder=True``) is silently wrong (1.65 on the sweep's tiny
RoCBert on 4.57.6, the first generated token of the padded rows' batch; 5.0 made its override call the generic
method, which derives the positions from the mask).

The defect and the correction are the family's: ``prepare_inputs/shared/mask_positions.py`` (RoCBert's override
passes the mask on but gives no ``position_ids``, so its forward numbers every row from 0 at its first column, pads
included). Detection (``probe``): the bert-decoder kind's left-padded batch (rows of different lengths, each against
a no-cache forward of the row alone).
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.prepare_inputs.shared import mask_positions

TARGET = "transformers.models.roc_bert.modeling_roc_bert:RoCBertForCausalLM.prepare_inputs_for_generation"


def install(patcher: Any) -> None:
    mask_positions.install(patcher, TARGET, __name__)
