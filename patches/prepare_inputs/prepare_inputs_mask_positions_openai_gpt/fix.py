"""prepare-inputs-mask-positions-openai-gpt: OpenAI-GPT before 5.2 gives generate() a left-padded row's pads as
positions (and before 4.57 drops the attention mask): every left-padded batch is silently wrong (3.07 on 4.57.6 on
the sweep's tiny model, the first generated token; 5.2 dropped the override).

The defect and the correction are the family's: ``prepare_inputs/shared/mask_positions.py``. Detection
(``probe``): a left-padded batch of rows of 7, 3 and 10 tokens, greedy ``generate()`` against a no-cache forward of
each unpadded row.
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.prepare_inputs.shared import mask_positions

TARGET = "transformers.models.openai.modeling_openai:OpenAIGPTLMHeadModel.prepare_inputs_for_generation"


def install(patcher: Any) -> None:
    mask_positions.install(patcher, TARGET, __name__)
