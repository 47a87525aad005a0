"""Gemma-3 / Gemma-4 with an image block longer than the sliding window, on the installed release (patches
sliding-window-image-mask-* up to 5.12, sliding-window-image-static-* on 5.13-5.16 and
sliding-window-image-generate-static-gemma4 on 5.5-5.22, -gemma3 on 4.53).

Tiny multimodal models (one-layer vision towers, window 8, images of 16 soft tokens) and prompts
``bos, text, boi, 16 image tokens, eoi, text``; the oracle is the forward given the masks written out by
``SlidingWindowPolicy`` (``oracles.sliding_static.image_mask_reference``): on sliding layers an image token sees
its own block both ways but nothing at or before ``q - W``; full layers see their block (Gemma-3) or stay causal
(Gemma-4). Checked: the no-cache forward, greedy generation with the dynamic and the static cache (batch 1 and a
left-padded batch of 3; eager and sdpa), a forward through a caller's ``StaticCache`` larger than the window, and
continuing from the returned cache with a text-only turn.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from cache_construction_models import at_least, patches_decided  # noqa: E402, F401 (fixture)
from hf_genfix.oracles import ProbeSkipped, assert_close  # noqa: E402
from hf_genfix.oracles import sliding_static as ss  # noqa: E402

W = ss.WINDOW
BUILD = {"gemma3": ss.tiny_gemma3_vlm, "gemma4": ss.tiny_gemma4_vlm}
_models: dict = {}
# (text before the image, text after it) per row: the image starts at different columns of the padded batch.
ONE_ROW, THREE_ROWS = [(2, 3)], [(2, 3), (5, 1), (0, 6)]


def vlm(name: str, attn: str):
    key = (name, attn)
    if key not in _models:
        try:
            _models[key] = BUILD[name](attn=attn)
        except ProbeSkipped as exc:
            pytest.skip(str(exc))
        except (ValueError, TypeError, ImportError) as exc:
            pytest.skip(f"a tiny {name} multimodal model cannot be built on this release: {exc}")
    return _models[key]


def skip_gemma3_continuation_before_457(name: str) -> None:
    """4.53-4.56: a cached Gemma-3 forward of several new tokens with token_type_ids raises ``IndexError: index 32
    is out of bounds for dimension 1 with size 6`` (the image mask indexes the new tokens' ids by absolute
    position); 4.57 is right. Outside issue 5's list: reported."""
    if name == "gemma3" and not at_least("4.57.0"):
        pytest.skip("4.53-4.56: continuing a Gemma-3 cache with token_type_ids raises IndexError (reported)")


CASES = [(name, attn, rows) for name in BUILD for attn in ("eager", "sdpa") for rows in (ONE_ROW, THREE_ROWS)]
IDS = [f"{n}-{a}-batch{len(r)}" for n, a, r in CASES]


@pytest.mark.parametrize("name, attn, rows", CASES, ids=IDS)
def test_prompt_forward_keeps_the_image_inside_the_window(name, attn, rows):
    m = vlm(name, attn)
    _, inputs = ss.image_prompt(m, rows)
    ss.check_image_forward(m, inputs, f"{name}/{attn} image prompt, {len(rows)} row(s)")


@pytest.mark.parametrize("name, attn, rows", CASES, ids=IDS)
@pytest.mark.parametrize("cache", ["dynamic", "static"])
def test_generation_after_an_image_prompt(name, attn, rows, cache):
    m = vlm(name, attn)
    _, inputs = ss.image_prompt(m, rows)
    kwargs = {"cache_implementation": "static"} if cache == "static" else {}
    ss.check_image_generation(m, inputs, f"{name}/{attn} {cache} cache, {len(rows)} row(s)", max_new_tokens=3 * W,
                              **kwargs)


@pytest.mark.parametrize("name", list(BUILD))
def test_forward_through_a_static_cache_larger_than_the_window(name):
    import torch

    from hf_genfix.helpers.decode import forward_spec

    m = vlm(name, "sdpa")
    _, inputs = ss.image_prompt(m, THREE_ROWS)
    with torch.no_grad():
        out = m(**inputs, **{forward_spec(m).cache_key: ss.static_cache(m, 3, 64)}, use_cache=True)
    real = inputs["attention_mask"].bool()
    assert_close(out.logits.float()[real], ss.image_mask_reference(m, inputs)[real], f"{name} through a StaticCache")


@pytest.mark.parametrize("name", list(BUILD))
def test_continuing_after_an_image_with_a_text_turn(name):
    """Second generate() on the returned cache: the new text turn sees the image only through the cache."""
    import torch

    from hf_genfix.oracles import generate_steps
    from hf_genfix.oracles.reference import max_diff

    skip_gemma3_continuation_before_457(name)
    m = vlm(name, "eager")
    _, inputs = ss.image_prompt(m, THREE_ROWS)
    extra = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
    with torch.no_grad():
        out = m.generate(inputs["input_ids"], attention_mask=inputs["attention_mask"], max_new_tokens=W,
                         do_sample=False, pad_token_id=0, eos_token_id=None, suppress_tokens=list(range(ss.BOI, 128)),
                         return_dict_in_generate=True, **extra)
    turn = torch.randint(3, 100, (3, 5), generator=torch.Generator().manual_seed(5))
    ids2 = torch.cat([out.sequences, turn], dim=1)
    mask2 = torch.nn.functional.pad(inputs["attention_mask"], (0, ids2.shape[1] - inputs["input_ids"].shape[1]),
                                    value=1)
    types = {k: torch.nn.functional.pad(v, (0, ids2.shape[1] - v.shape[1])) for k, v in extra.items()
             if k in ("token_type_ids", "mm_token_type_ids")}
    run = generate_steps(m, ids2, mask2, max_new_tokens=2 * W, past_key_values=out.past_key_values, pad_token_id=0,
                         eos_token_id=None, suppress_tokens=list(range(ss.BOI, 128)), **types)
    final = dict(inputs, input_ids=run.sequences,
                 attention_mask=torch.nn.functional.pad(mask2, (0, 2 * W), value=1),
                 **{k: torch.nn.functional.pad(v, (0, 2 * W)) for k, v in types.items()})
    expected = ss.image_mask_reference(m, final)
    for t, logits in enumerate(run.step_logits):
        diff = max_diff(logits.float(), expected[:, ids2.shape[1] - 1 + t])
        assert diff <= 1e-4, f"{name}: continued turn, step {t}: max |logit diff| {diff:.3g}"
