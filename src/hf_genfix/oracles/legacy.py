"""A remote-code model whose ``prepare_inputs_for_generation`` is written the 4.40 way, and its oracle.

The override is the one transformers 4.40 shipped for Mistral (and that many Hub repos copied): it reads
``past_key_values.seen_tokens`` and ``past_key_values.get_max_length()``, falls back to legacy tuple indexing
``past_key_values[0][0]``, and knows the cache only as ``past_key_values``. The rest of the model is the
installed release's Llama, so only the override is old. ``write_remote_model`` lays it out as a local repo
(``config.json`` with an ``auto_map``, ``configuration_tinylegacy.py``, ``modeling_tinylegacy.py``) that
``trust_remote_code=True`` loads like a Hub repo.

The oracle (``check_legacy_generate``): greedy ``generate()`` on a left-padded batch must match the reference
at every step, and after the prefill every forward must receive one token and a cache holding the sequence so
far (a model that never gets its cache recomputes the whole sequence each step).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from .decode import DEFAULT_ROWS, UPSTREAM_ERRORS, defect_on_error
from .generation import check_rows_against_reference, generate_steps, left_pad
from .outcome import DefectObserved
from .precision import cast
from .tiny import tiny_config

CONFIGURATION_SOURCE = '''\
from transformers import LlamaConfig


class TinyLegacyConfig(LlamaConfig):
    model_type = "tinylegacy"
'''

# transformers 4.40, MistralForCausalLM.prepare_inputs_for_generation, unchanged (comments shortened).
OVERRIDE_SOURCE = '''\
def prepare_inputs_for_generation(
    self, input_ids, past_key_values=None, attention_mask=None, inputs_embeds=None, **kwargs
):
    # Omit tokens covered by past_key_values
    if past_key_values is not None:
        if isinstance(past_key_values, Cache):
            cache_length = past_key_values.get_seq_length()
            past_length = past_key_values.seen_tokens
            max_cache_length = past_key_values.get_max_length()
        else:
            cache_length = past_length = past_key_values[0][0].shape[2]
            max_cache_length = None

        # Keep only the unprocessed tokens:
        if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
            input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
        elif past_length < input_ids.shape[1]:
            input_ids = input_ids[:, past_length:]

        # If we are about to go beyond the maximum cache length, we need to crop the input attention mask.
        if (
            max_cache_length is not None
            and attention_mask is not None
            and cache_length + input_ids.shape[1] > max_cache_length
        ):
            attention_mask = attention_mask[:, -max_cache_length:]

    position_ids = kwargs.get("position_ids", None)
    if attention_mask is not None and position_ids is None:
        # create position_ids on the fly for batch generation
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values:
            position_ids = position_ids[:, -input_ids.shape[1] :]

    # if `inputs_embeds` are passed, we only want to use them in the 1st generation step
    if inputs_embeds is not None and past_key_values is None:
        model_inputs = {"inputs_embeds": inputs_embeds}
    else:
        model_inputs = {"input_ids": input_ids}

    model_inputs.update(
        {
            "position_ids": position_ids,
            "past_key_values": past_key_values,
            "use_cache": kwargs.get("use_cache"),
            "attention_mask": attention_mask,
        }
    )
    return model_inputs
'''

MODELING_SOURCE = (
    "from transformers import LlamaForCausalLM\n"
    "from transformers.cache_utils import Cache\n\n"
    "from .configuration_tinylegacy import TinyLegacyConfig\n\n\n"
    "class TinyLegacyForCausalLM(LlamaForCausalLM):\n"
    "    config_class = TinyLegacyConfig\n\n"
    + "".join("    " + line if line.strip() else line for line in OVERRIDE_SOURCE.splitlines(keepends=True))
)

_IN_PROCESS: dict[str, Any] = {}


def legacy_model_class() -> type:
    """The same model defined in this process (module ``hf_genfix_legacy_model``, outside transformers, as a
    remote-code module is): what the probe uses, to load nothing from disk. Created once per process."""
    cls = _IN_PROCESS.get("cls")
    if cls is None:
        import sys
        import types

        from transformers import LlamaForCausalLM
        from transformers.cache_utils import Cache

        # A real module, as remote code has one: transformers looks classes' modules up in sys.modules.
        module = types.ModuleType("hf_genfix_legacy_model")
        module.__file__ = __file__  # 5.0 reads the source file of a model's module; the override's text is here
        module.Cache = Cache
        exec(compile(OVERRIDE_SOURCE, "<hf_genfix legacy override>", "exec"), module.__dict__)
        sys.modules[module.__name__] = module
        cls = module.TinyLegacyForCausalLM = type("TinyLegacyForCausalLM", (LlamaForCausalLM,), {
            "prepare_inputs_for_generation": module.prepare_inputs_for_generation,
            "__module__": module.__name__,
        })
        _IN_PROCESS["cls"] = cls
    return cls


def write_remote_model(directory: str | Path) -> Path:
    """Lay out the local remote-code repo in ``directory`` (a tiny Llama config with an ``auto_map``)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "configuration_tinylegacy.py").write_text(CONFIGURATION_SOURCE)
    (directory / "modeling_tinylegacy.py").write_text(MODELING_SOURCE)
    config = {k: v for k, v in tiny_config("llama").to_dict().items() if not k.startswith("_")}
    config.update(
        model_type="tinylegacy",
        architectures=["TinyLegacyForCausalLM"],
        auto_map={
            "AutoConfig": "configuration_tinylegacy.TinyLegacyConfig",
            "AutoModelForCausalLM": "modeling_tinylegacy.TinyLegacyForCausalLM",
        },
    )
    (directory / "config.json").write_text(json.dumps(config, indent=1, default=str))
    return directory


def load_remote_model(directory: str | Path, seed: int = 0) -> Any:
    """The model of ``write_remote_model``'s repo, loaded with ``trust_remote_code=True`` (float32, eval)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(directory), trust_remote_code=True)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    with torch.device("cpu"):  # CUDA's generator would draw other weights for the seed
        model = AutoModelForCausalLM.from_config(config, trust_remote_code=True)
    return cast(model.float())


def check_legacy_generate(
    model: Any, rows: Sequence[Sequence[int]] = DEFAULT_ROWS, max_new_tokens: int = 4, tuple_seq_dim: int = -2
) -> dict[str, Any]:
    """Greedy generate on a left-padded batch: every step equals the reference, and each forward after the
    prefill gets one new token and a cache holding everything before it (read from a tuple cache's
    ``tuple_seq_dim``: 0 for models that keep ``[seq, batch, heads, dim]``)."""
    fed: list[tuple[int, int]] = []

    def record(module: Any, args: tuple, kwargs: dict) -> None:
        from ..helpers.decode import cache_length

        ids = kwargs.get("input_ids", args[0] if args else None)
        cache = kwargs.get("past_key_values", kwargs.get("cache"))
        if isinstance(cache, (tuple, list)) and cache and tuple_seq_dim != -2:
            held = int(cache[0][0].shape[tuple_seq_dim])
        else:
            held = cache_length(cache)
        fed.append((int(ids.shape[1]) if ids is not None else -1, held))

    ids, mask = left_pad(rows)
    handle = model.register_forward_pre_hook(record, with_kwargs=True)
    what = f"{type(model).__name__} (4.40-style prepare_inputs_for_generation) generate"
    try:
        # Remote code checks its inputs with assert (DeepSeek-V2's attention: a mask).
        with defect_on_error(what, (AssertionError, *UPSTREAM_ERRORS)):
            run = generate_steps(model, ids, mask, max_new_tokens=max_new_tokens, pad_token_id=0)
    finally:
        handle.remove()
    figures = check_rows_against_reference(model, rows, run, what)
    width = ids.shape[1]
    for step, (tokens, cached) in enumerate(fed[1:], start=1):
        if tokens != 1 or cached != width + step - 1:
            raise DefectObserved(
                f"{what}: step {step} fed {tokens} tokens with a cache of {cached} positions (expected 1 token "
                f"after {width + step - 1} cached): the cache does not reach forward",
                step=step, tokens_fed=tokens, cached=cached,
            )
    figures["forwards"] = len(fed)
    figures["sequences"] = run.sequences.tolist()
    return figures
