"""The probes of ``model-qwen2-5-vl-padded-deltas``, ``model-qwen2-vl-padded-deltas``: the defects, and how they are
detected, are in ``_qwen_vl_padded_deltas.py``'s docstring.
"""

from __future__ import annotations


def _probe(arch: str) -> dict:
    from hf_genfix.oracles.sweep import imagetext as images
    from hf_genfix.oracles.sweep.families import ImageTextSubject
    from hf_genfix.oracles.sweep.imagetext import loud

    s = ImageTextSubject(arch)
    with loud(s.model):
        prompts, pictures = images._rows(s, (6, 3), seed=40)
        first_inputs = images._inputs(s, prompts, pictures)
        width = first_inputs["input_ids"].shape[1]
        first = images._generate(s, first_inputs, max_new_tokens=3)
        said = [first.sequences[b, width:].tolist() + [7, 8, 9, 10] for b in range(len(prompts))]
        second_inputs = images._inputs(s, prompts, pictures, said, pixels=False)
        second = images._generate(s, second_inputs, max_new_tokens=4,
                                  past_key_values=images._returned_cache(first))
        figures = images._check(s, prompts, pictures, first, width, "the first turn")
        so_far = [p + said[b] for b, p in enumerate(prompts)]
        figures.update(images._check(s, so_far, pictures, second, second_inputs["input_ids"].shape[1],
                                     "a second turn straight from out.past_key_values (the image in the first "
                                     "turn) vs the whole conversation"))
    return figures


def probe_qwen2_vl() -> dict:
    return _probe("qwen2_vl")


def probe_qwen2_5_vl() -> dict:
    return _probe("qwen2_5_vl")
