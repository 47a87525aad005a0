"""The probe of ``decoding-inputs-embeds-penalty`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations

PENALTY_VALUE = 1.8


def probe() -> dict:
    import torch

    from hf_genfix.oracles import DefectObserved, reference_logits, tiny_model
    from hf_genfix.oracles.generation import generate_steps, left_pad
    from hf_genfix.oracles.precision import tolerance
    from hf_genfix.oracles.reference import max_diff
    from hf_genfix.oracles.tiny import calibrate

    model = calibrate(tiny_model("llama"))  # logits of std ~1: the penalty moves a score by O(1)
    generator = torch.Generator().manual_seed(3)
    rows = [torch.randint(2, 128, (n,), generator=generator).tolist() for n in (9, 3)]
    ids, mask = left_pad(rows)
    with torch.no_grad():
        embeds = model.get_input_embeddings()(ids)
    run = generate_steps(model, None, mask, max_new_tokens=8, inputs_embeds=embeds, pad_token_id=0,
                         eos_token_id=None, repetition_penalty=PENALTY_VALUE, output_scores=True,
                         output_logits=False)
    worst, steps = 0.0, 0
    for b, row in enumerate(rows):
        new = run.new_tokens(b)
        reference = reference_logits(model, row + new)
        for t in range(len(new)):
            expected = reference[len(row) - 1 + t].float().clone()
            for token in set(new[:t]):  # the penalty by its definition, over this row's generated tokens
                value = expected[token]
                expected[token] = value / PENALTY_VALUE if value > 0 else value * PENALTY_VALUE
            diff = max_diff(run.step_logits[t][b].float(), expected)
            worst, steps = max(worst, diff), steps + 1
            if not diff <= tolerance():
                raise DefectObserved(
                    f"generate(inputs_embeds=, repetition_penalty={PENALTY_VALUE}) of a left-padded batch: row {b} "
                    f"({len(ids[0]) - len(row)} pads), step {t}: scores {diff:.3g} off the penalty over the row's "
                    "generated tokens", max_logit_diff=diff, row=b, step=t)
    return {"max_logit_diff": worst, "steps": steps}
