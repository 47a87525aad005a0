"""The project of docs/upgrading.md's real run of ``hf-genfix upgrade-check``, built from configs (no download).

    python benchmarks/upgrade_check_project.py DIR      # with the transformers the project runs (4.57.6 there)
    pip install --no-build-isolation --no-deps -e DIR/proj
    cd DIR/proj && hf-genfix upgrade-check 5.24.0 --model ../models/llama --model ../models/mistral -- pytest tests

DIR/models/llama: a tiny Llama whose tokenizer has no pad token; DIR/models/mistral: a tiny Mistral with a
4-token sliding window, its tokenizer left-padding with a chat template; DIR/proj: the package ``demoproj``
(installed editable: its tests import it) and three tests, one of which indexes ``past_key_values`` the 4.x way
(it regresses on 5.x: ``TypeError: 'DynamicCache' object is not subscriptable``).
"""
import os
import sys
import textwrap

import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers

root = sys.argv[1]
words = ("the quick brown fox jumps over lazy dog and then hello , user assistant : a b c d e f g h i j k l m n o "
         "p q r s t u v w x y z one two three four five").split()
vocab = {w: i for i, w in enumerate(["<unk>", "<s>", "</s>"] + sorted(set(words)))}


def tokenizer(**kw):
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>",
                                                unk_token="<unk>", model_input_names=["input_ids", "attention_mask"], **kw)


torch.manual_seed(0)
common = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, bos_token_id=1, eos_token_id=2)
llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))  # no pad token anywhere
llama.save_pretrained(f"{root}/models/llama")
tokenizer().save_pretrained(f"{root}/models/llama")
mistral = transformers.MistralForCausalLM(transformers.MistralConfig(**common, sliding_window=4))
mistral.save_pretrained(f"{root}/models/mistral")
tok = tokenizer(pad_token="<unk>", padding_side="left")
tok.chat_template = "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}" \
                    "{% if add_generation_prompt %}assistant :{% endif %}"
tok.save_pretrained(f"{root}/models/mistral")

proj = f"{root}/proj"
os.makedirs(f"{proj}/src/demoproj", exist_ok=True)
os.makedirs(f"{proj}/tests", exist_ok=True)
open(f"{proj}/pyproject.toml", "w").write(textwrap.dedent("""\
    [build-system]
    requires = ["setuptools>=64"]
    build-backend = "setuptools.build_meta"
    [project]
    name = "demoproj"
    version = "0.1"
    """))
open(f"{proj}/src/demoproj/__init__.py", "w").write(textwrap.dedent('''\
    import transformers

    def load(path):
        return (transformers.AutoModelForCausalLM.from_pretrained(path).eval(),
                transformers.AutoTokenizer.from_pretrained(path))

    def complete(model, tok, text, n=4):
        enc = tok([text], return_tensors="pt")
        return model.generate(**enc, max_new_tokens=n, do_sample=False, pad_token_id=tok.eos_token_id)
    '''))
open(f"{proj}/tests/test_demo.py", "w").write(textwrap.dedent(f'''\
    import torch
    import demoproj

    MODELS = "{root}/models"

    def test_complete_llama():
        model, tok = demoproj.load(MODELS + "/llama")
        out = demoproj.complete(model, tok, "the quick brown fox")
        assert out.shape == (1, 8)

    def test_sliding_window_mistral_batch():
        model, tok = demoproj.load(MODELS + "/mistral")
        enc = tok(["the quick brown fox jumps over the lazy dog", "hello"], return_tensors="pt", padding=True)
        out = model.generate(**enc, max_new_tokens=6, do_sample=False)
        assert out.shape[0] == 2

    def test_legacy_cache_indexing():
        model, tok = demoproj.load(MODELS + "/llama")
        out = model(**tok(["the quick brown fox"], return_tensors="pt"), use_cache=True)
        key, value = out.past_key_values[0]  # the 4.x tuple-of-layers API
        assert key.shape[-2] == 4
    '''))
