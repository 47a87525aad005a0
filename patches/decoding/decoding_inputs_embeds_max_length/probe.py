"""The probe of ``decoding-inputs-embeds-max-length`` (the defect, and how it is detected: ``fix.py``)."""

from __future__ import annotations


def probe() -> dict:
    import torch

    from hf_genfix.oracles import generate_steps, tiny_model
    from hf_genfix.oracles.outcome import DefectObserved

    model = tiny_model("llama")
    ids = torch.tensor([[17, 44, 91, 23, 5, 60]])
    embeds = model.get_input_embeddings()(ids).detach()
    mask = torch.ones_like(ids)
    worst = 0.0
    # max_length=10 and 12; the default length is left out: it means "20 new tokens" with input_ids and 20 in all
    # with inputs_embeds on 4.47 and 4.49 (what the default means there is upstream's choice, not this defect).
    for what, length in (("max_length=10", dict(max_length=10)), ("max_length=12", dict(max_length=12))):
        stop = dict(max_new_tokens=None, pad_token_id=0, eos_token_id=None, **length)
        expected = generate_steps(model, ids, mask, **stop)
        actual = generate_steps(model, None, mask, inputs_embeds=embeds, **stop)
        want, got = expected.new_tokens(0), actual.new_tokens(0)
        if want != got:
            raise DefectObserved(f"a 6-token prompt, {what}: generate(inputs_embeds=) gives {len(got)} new tokens "
                                 f"{got}, generate(input_ids) {len(want)} {want}")
        for a, b in zip(expected.step_logits, actual.step_logits):
            worst = max(worst, float((a - b).abs().max()))
    if worst > 1e-4:
        raise DefectObserved(f"a 6-token prompt: the same tokens, logits {worst:.3g} apart")
    return {"max_logit_diff": worst}
