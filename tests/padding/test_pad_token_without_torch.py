"""pad-token where torch is not installed (issue 37): a tokenizer needs no torch, and neither does the patch.

Without torch, 5.x's ``from transformers.models.auto import modeling_auto`` hands out a placeholder whose every
attribute raises "Please install PyTorch"; the patch read the causal-LM names there, failed, and left the tokenizer
as upstream loads it while ``status()`` said ``applied``: padding a Llama-3-style batch still raised "Asking to
pad but the tokenizer does not have a padding token" (measured in a venv with transformers 5.24.0 and tokenizers
0.23.3, no torch).

The default run blocks torch in a fresh interpreter (``sys.modules["torch"] = None``: ``find_spec`` then answers
None, as where torch is absent, and transformers takes itself for torch-less); the second test runs the same
program as is where the test environment really has no torch.
"""

from __future__ import annotations

import importlib.util

import pytest

from conftest import run_json

PROGRAM = """
import json, logging, sys
{block}
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
import hf_genfix
from transformers.utils import is_torch_available
from hf_genfix.oracles.tokenizers import load_tokenizer

tokenizer = load_tokenizer("llama3")
try:
    padded = tokenizer(["hello world", "the fox"], padding=True)["input_ids"]
    error = None
except ValueError as exc:
    padded, error = None, str(exc)
print(json.dumps({{
    "torch": is_torch_available() or "torch" in sys.modules and sys.modules["torch"] is not None,
    "state": {{s.id: s.state for s in hf_genfix.status()}}["pad-token"],
    "pad": [tokenizer.pad_token, tokenizer.pad_token_id], "eos": [tokenizer.eos_token, tokenizer.eos_token_id],
    "padded": padded, "error": error,
}}))
"""


def _assert_pads_with_eos(out: dict) -> None:
    assert out["torch"] is False
    assert out["state"] == "applied"
    # applied means applied: the batch pads with eos, as it does where torch is installed
    assert out["error"] is None, out["error"]
    assert out["pad"] == out["eos"] and out["pad"][0] is not None, out
    assert len({len(row) for row in out["padded"]}) == 1 and out["padded"][1][-1] == out["eos"][1], out["padded"]


def test_pad_token_pads_a_batch_where_torch_cannot_be_imported():
    blocked = 'sys.modules["torch"] = None  # as if torch were not installed'
    _assert_pads_with_eos(run_json(PROGRAM.format(block=blocked)))


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed here (the test above "
                    "blocks it instead)")
def test_pad_token_pads_a_batch_without_torch_installed():
    _assert_pads_with_eos(run_json(PROGRAM.format(block="")))


def test_a_failed_guess_is_said_once_and_leaves_the_tokenizer_as_upstream_loads_it(monkeypatch, caplog):
    # Whatever else makes the decoder-only guess fail: the user hears it once, instead of a silent `applied`.
    import hf_genfix
    from hf_genfix import catalog
    pad_token = catalog.fix('pad-token')
    from hf_genfix.oracles.tokenizers import load_tokenizer
    from transformers import AutoTokenizer  # noqa: F401 - installs the patch

    if {s.id: s.state for s in hf_genfix.status()}["pad-token"] != "applied":
        pytest.skip("pad-token is not applied on this release")

    def fails(config):
        raise ImportError("\nPlease install or upgrade PyTorch")

    monkeypatch.setattr(pad_token, "is_decoder_only", fails)
    monkeypatch.setattr(pad_token, "_told", set())
    with caplog.at_level("DEBUG", logger="hf_genfix"):
        tokenizers = [load_tokenizer("llama3"), load_tokenizer("llama3")]
    assert [t.pad_token for t in tokenizers] == [None, None]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and "could not tell whether" in warned[0], warned
    assert "(ImportError: Please install or upgrade PyTorch)" in warned[0]
