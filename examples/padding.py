"""A right-padded batch given to generate(): every row should get the tokens it gets alone.

    python examples/padding.py                 # with hf_genfix: RIGHT
    HF_GENFIX=off python examples/padding.py   # upstream: WRONG (the short row continues after its pads)
"""

import hf_genfix  # noqa: F401 - first, as in any program that uses it

import sys

import torch
from _show import INIT, verdict
from hf_genfix.oracles import right_pad, tiny_model
from hf_genfix.oracles.padding import check_right_padded_generate

model = tiny_model("llama", initializer_range=INIT)
rows = [[17, 44, 91, 23, 5, 60, 12, 77], [88, 41, 7]]
ids, mask = right_pad(rows)  # the short row is followed by pad tokens (id 0)
batch = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=6, do_sample=False, pad_token_id=0)
for i, row in enumerate(rows):
    alone = model.generate(torch.tensor([row]), max_new_tokens=6, do_sample=False, pad_token_id=0)
    print(f"row {i}: in the batch {batch[i, ids.shape[1]:].tolist()}, alone {alone[0, len(row):].tolist()}")
sys.exit(verdict("each row of the right-padded batch gets what it gets alone",
                 lambda: check_right_padded_generate(model, rows, max_new_tokens=6)))
