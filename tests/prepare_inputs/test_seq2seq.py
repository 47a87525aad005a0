"""Issue 13 item 8: encoder-decoder models (T5, BART, Whisper) in a hand-written loop.

The encoder runs once; each step passes the decoder ids (the whole sequence, start token first, or only the last
token), the cache and the encoder output through ``prepare_inputs_for_generation`` and calls ``forward``. Every
step's logits must equal the decoder logits of a no-cache forward over the decoder ids so far with the same
encoder output. Where upstream already gets this right, hf_genfix's logits are bit-identical to upstream's; and
``generate()`` is bit-identical with and without the patch.
"""

from __future__ import annotations

import pytest

from prepare_inputs_models import model_of, quiet_transformers, skip_known_limit, with_and_without

pytest.importorskip("torch")
pytest.importorskip("transformers")

ARCHES = ("t5", "bart", "whisper")


def seq2seq_of(arch):
    return model_of(arch, seq2seq=True)


# A loop written before 5.24 (past_key_values=) meets 5.24's FutureWarning, as it does without hf_genfix.
@pytest.mark.filterwarnings("ignore:`past_key_values` is deprecated:FutureWarning")
@pytest.mark.parametrize("cache_key", ["past_key_values", "cache"])
@pytest.mark.parametrize("feed", ["full", "new"])
@pytest.mark.parametrize("arch", ARCHES)
def test_manual_seq2seq_loop_matches_reference(arch, feed, cache_key):
    from hf_genfix.oracles.decode import check_manual_seq2seq_loop

    with quiet_transformers():
        figures = check_manual_seq2seq_loop(seq2seq_of(arch), feed=feed, cache_key=cache_key)
    assert figures["steps_compared"] > 0


@pytest.mark.parametrize("feed", ["full", "new"])
@pytest.mark.parametrize("arch", ARCHES)
def test_identical_where_upstream_is_right(arch, feed):
    import torch

    from hf_genfix.oracles.decode import manual_seq2seq_loop

    model = seq2seq_of(arch)
    with quiet_transformers():
        plain, patched = with_and_without(lambda: manual_seq2seq_loop(model, feed=feed))
    if isinstance(plain, str):
        return  # upstream raises here (4.46 - 5.2); the reference test above holds hf_genfix to the oracle
    reference = _reference_steps(model, plain)
    if all(float((a - b).abs().max()) <= 1e-4 for a, b in zip(plain[1], reference)):
        assert torch.equal(plain[0], patched[0])
        for a, b in zip(plain[1], patched[1]):
            assert torch.equal(a, b)


def _reference_steps(model, run):
    import torch

    decoder_ids, _, encoded, extra = run
    with torch.no_grad():
        logits = model(encoder_outputs=encoded, decoder_input_ids=decoder_ids[:, :-1], use_cache=False,
                       **extra).logits
    return [logits[:, t] for t in range(logits.shape[1])]


def test_decoder_chunk_after_a_cached_prefix_is_fed_whole():
    # Forced decoder tokens fed as a chunk after a cached prefix: the chunk does not begin with the start token,
    # and with cache_position stated it is new on every release.
    import torch

    from hf_genfix.helpers.decode import cache_from_outputs
    from hf_genfix.oracles.decode import prepare_cache_keyword
    from hf_genfix.oracles import assert_close
    from hf_genfix.oracles.decode import encoder_inputs

    model = seq2seq_of("bart")
    skip_known_limit("bart", "chunk")
    source = encoder_inputs(model)
    start = model.config.decoder_start_token_id
    decoder_ids = torch.tensor([[start, 17, 44, 91, 23, 5], [start, 60, 12, 77, 38, 101]])
    with torch.no_grad(), quiet_transformers():
        encoded = model.get_encoder()(**source)
        first = model(encoder_outputs=encoded, attention_mask=source["attention_mask"],
                      decoder_input_ids=decoder_ids[:, :2], use_cache=True)
        inputs = model.prepare_inputs_for_generation(
            decoder_ids[:, 2:], **{prepare_cache_keyword(): cache_from_outputs(first)}, encoder_outputs=encoded,
            attention_mask=source["attention_mask"], cache_position=torch.arange(2, 6), use_cache=True)
        logits = model(**inputs).logits
        expected = model(encoder_outputs=encoded, attention_mask=source["attention_mask"],
                         decoder_input_ids=decoder_ids, use_cache=False).logits[:, 2:]
    assert logits.shape == expected.shape
    assert_close(logits, expected, "bart: decoder chunk after a cached prefix")


@pytest.mark.parametrize("arch", ["t5", "bart"])
def test_generate_is_bit_identical_with_the_patch(arch):
    import hf_genfix
    import torch

    from hf_genfix.oracles.decode import encoder_inputs

    model = seq2seq_of(arch)
    source = encoder_inputs(model)
    runs = []
    for context in (hf_genfix.disabled("prepare-inputs"), hf_genfix.forced("prepare-inputs")):
        with context, quiet_transformers(), torch.no_grad():
            out = model.generate(**source, max_new_tokens=5, do_sample=False, return_dict_in_generate=True,
                                 output_logits=True)
            runs.append((out.sequences, out.logits))
    (seq_a, logits_a), (seq_b, logits_b) = runs
    assert torch.equal(seq_a, seq_b)
    assert all(torch.equal(a, b) for a, b in zip(logits_a, logits_b))
