"""A trust_remote_code model written for transformers 4.40 (its prepare_inputs_for_generation is Mistral's from
4.40, as many Hub repos copied it), loaded from a local repo: generate() on a left-padded batch should give what
a full forward over each row gives, feeding one new token per step with the cache.

    python examples/remote_code.py                 # with hf_genfix: RIGHT
    HF_GENFIX=off python examples/remote_code.py   # upstream on 4.49+: WRONG (a crash, or the cache is lost)
"""

import hf_genfix  # noqa: F401

import sys
import tempfile

from _show import verdict
from hf_genfix.oracles.legacy import check_legacy_generate, load_remote_model, write_remote_model

with tempfile.TemporaryDirectory() as repo:
    write_remote_model(repo)  # config.json with an auto_map, configuration_*.py, modeling_*.py
    model = load_remote_model(repo)  # AutoModelForCausalLM ... trust_remote_code=True
    sys.exit(verdict("generate() of the 4.40-era remote model matches the reference and uses its cache",
                     lambda: print("tokens:", check_legacy_generate(model)["sequences"])))
