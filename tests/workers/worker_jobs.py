"""What every worker does in tests/workers, with transformers alone.

Nothing here imports hf_genfix before the calls: a worker started without the documented step must meet the
defects as upstream has them. After the calls each worker imports ``hf_genfix.workers`` and sends back its own
``report()``. The test checks the results against the oracle in the parent (``check_worker``).
"""

from __future__ import annotations

import json
import os
import sys

_tokenizers: dict = {}


def job(inputs: dict, generate: bool = True) -> dict:
    """A right-padded batch through ``generate()`` of the saved tiny model, and ``AutoTokenizer`` on a repo
    without a pad token asked to pad a batch; then this process's ``hf_genfix.workers.report()``."""
    result = {"pid": os.getpid(), "hf_genfix_at_start": "hf_genfix" in sys.modules}
    if generate:
        result.update(_right_padded_generate(inputs))
    result.update(pad_texts(inputs, inputs["texts"]))
    import hf_genfix.workers

    result["report"] = hf_genfix.workers.report()
    return result


def _right_padded_generate(inputs: dict) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(inputs["model_dir"], attn_implementation="eager").eval()
    rows, pad = inputs["rows"], inputs["pad_token_id"]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):  # padding on the right
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, pad_token_id=pad, do_sample=False, max_new_tokens=4,
                             return_dict_in_generate=True, output_logits=True)
    return {"sequences": out.sequences.tolist(), "step_logits": [s.tolist() for s in out.logits],
            "prompt_width": width}


def pad_texts(inputs: dict, texts: list) -> dict:
    """``AutoTokenizer.from_pretrained`` (once per process, as a DataLoader worker would) and a padded batch."""
    from transformers import AutoTokenizer

    path = inputs["tokenizer_dir"]
    if path not in _tokenizers:
        _tokenizers[path] = AutoTokenizer.from_pretrained(path)
    tok = _tokenizers[path]
    try:
        return {"pad_error": None, "padded": tok(list(texts), padding=True)["input_ids"],
                "pad_token": tok.pad_token}
    except ValueError as exc:
        return {"pad_error": str(exc), "padded": None, "pad_token": tok.pad_token}


def at_barrier(args: tuple) -> dict:
    """``job`` once every worker of the pool holds a task: each worker runs exactly one."""
    barrier, inputs = args
    barrier.wait(timeout=120)
    return job(inputs)


class TextDataset:
    """Items are texts; the batch is tokenized and padded in the DataLoader worker (``collate``)."""

    def __init__(self, texts: list):
        self.texts = list(texts)

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, i: int) -> str:
        return self.texts[i]


class Collate:
    def __init__(self, inputs: dict):
        self.inputs = inputs

    def __call__(self, texts: list) -> dict:
        result = {"pid": os.getpid(), "hf_genfix_at_start": "hf_genfix" in sys.modules}
        result.update(pad_texts(self.inputs, texts))
        import hf_genfix.workers

        result["report"] = hf_genfix.workers.report()
        return result


def load_inputs(workdir: str) -> dict:
    with open(os.path.join(workdir, "inputs.json"), encoding="utf-8") as f:
        return json.load(f)


def write_results(workdir: str, results: list) -> None:
    with open(os.path.join(workdir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f)
