"""remote-code-tied-weights: remote models with 4.x's list-form ``_tied_weights_keys`` cannot be built on 5.x.

The defect. Up to 4.57, ``_tied_weights_keys`` was a list of the parameters tied to the input embeddings
(``["lm_head.weight"]``: MiniCPM, DeepSeek-V2/V3, old Phi-3, InternLM2, CodeShell, Florence-2 declare it so), and
``tie_weights()`` tied ``get_output_embeddings()`` to ``get_input_embeddings()`` when
``config.tie_word_embeddings`` was set. 5.0.0 made it a ``{target: source}`` mapping and reads ``.keys()`` in
``post_init``: a tied remote model fails at construction with ``AttributeError: 'list' object has no attribute
'keys'`` (measured 5.0.0, 5.24.0; 4.57.6 builds it with the head tied).

Detection (``probe``): the tiny MiniCPM-style remote repo (tied embeddings, the list form) must load with its
output embeddings tied to its input embeddings, and generate like its no-cache reference.

Correction. Before ``post_init`` of a remote-code model whose class declares the list form, the instance gets the
mapping that means what 4.x did: ``{<output embeddings>.weight: <input embeddings>.weight}`` (nothing where the
model has no output embeddings, which 4.x did not tie either). The class keeps its list. A model that declares the
mapping is untouched.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit.remote_code import is_remote

TARGET = "transformers.modeling_utils:PreTrainedModel.post_init"


def tied_mapping(model: Any) -> dict[str, str]:
    """What 4.x's ``tie_weights`` tied, as 5.x's ``{target: source}`` parameter names."""
    try:
        output, input_ = model.get_output_embeddings(), model.get_input_embeddings()
    except (NotImplementedError, AttributeError):
        return {}
    if output is None or input_ is None:
        return {}
    names = {id(module): name for name, module in model.named_modules()}
    if id(output) not in names or id(input_) not in names:
        return {}
    return {f"{names[id(output)]}.weight": f"{names[id(input_)]}.weight"}


def install(patcher: Any) -> None:
    patcher.require(TARGET)

    def wrapper(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        if instance is not None and is_remote(type(instance)) and isinstance(
                getattr(type(instance), "_tied_weights_keys", None), (list, tuple)):
            instance._tied_weights_keys = tied_mapping(instance)
        return wrapped(*args, **kwargs)

    patcher.wrap(TARGET, wrapper)
