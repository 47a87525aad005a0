"""The plain program that meets ``prepare-inputs-encoder-mask``: greedy generate() on a padded encoder batch of a
tiny BART.

Its top level is what such a program imports: ``hf-genfix doctor`` runs it in a fresh interpreter, where those
imports decide whether the patch is installed. ``run(repo, applied)`` is what the program does: the patch's test
runs it in a fresh interpreter after the imports, and requires the patch installed (``applied(id)`` says whether a
patch is).
"""

from transformers import BartConfig, BartForConditionalGeneration


def run(repo, applied):
    import torch

    config = BartConfig(vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                        max_position_embeddings=64)
    model = BartForConditionalGeneration(config).eval()
    src = torch.tensor([[5, 6, 7, 8, 9, 10], [11, 12, 13, 1, 1, 1]])
    model.generate(src, attention_mask=(src != 1).long(), max_new_tokens=3, do_sample=False)
