"""prepare-inputs-mask-positions-xlm-roberta-xl: XLM-RoBERTa-XL before 4.48 gives generate() a left-padded row's
pads as positions: every cached step of a left-padded batch of its decoder (``is_decoder=True``) is silently wrong.

The defect and the correction are the family's: ``prepare_inputs/shared/mask_positions.py``. Its own
``prepare_inputs_for_generation`` passes the mask on but gives no ``position_ids``, so the forward numbers the ids
it is fed itself (``create_position_ids_from_input_ids``): right for the prompt, whose pads it can see, but after a
cache it counts every cached column, pads included (``past_key_values_length``), so a row behind k pads is embedded
k positions late. 4.48 (PR #35044) made the override number them from the mask. The positions added are the
model's own numbering, from ``padding_idx + 1`` (``padding_idx_positions``).

Detection (``probe``): the bert-decoder kind's left-padded batch (rows of different lengths, each against a no-cache
forward of the row alone).
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.prepare_inputs.shared import mask_positions

TARGET = ("transformers.models.xlm_roberta_xl.modeling_xlm_roberta_xl"
          ":XLMRobertaXLForCausalLM.prepare_inputs_for_generation")


def install(patcher: Any) -> None:
    mask_positions.install(patcher, TARGET, __name__)
