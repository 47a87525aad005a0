"""remote-code-attn-mask-utils: remote code importing ``transformers.modeling_attn_mask_utils`` no longer loads.

The defect. Remote-code models written for 4.36 - 4.4x build their masks with the helpers of
``transformers.modeling_attn_mask_utils`` (``_prepare_4d_causal_attention_mask`` in old Phi-3;
``AttentionMaskConverter``, ``_prepare_4d_attention_mask`` and ``_prepare_4d_causal_attention_mask`` in
DeepSeek-V2; also ``_prepare_4d_causal_attention_mask_for_sdpa`` in MiniCPM). 5.24.0 removed the module, so
loading such a model fails: ``ModuleNotFoundError: No module named 'transformers.modeling_attn_mask_utils'``
(5.23.0 still ships it: 5.20.2, 5.21.0, 5.22.0 and 5.23.0 run, each with all six names; 5.24.0 run).

Detection (``probe``): the tiny Phi-3-style remote repo of ``hf_genfix.oracles.legacy_models`` must load and
generate like its no-cache reference.

Correction. While ``get_class_in_module`` executes a remote module, a ``sys.meta_path`` finder (placed last, so a
real module always wins) serves ``hf_genfix._patches.remote_code.shared.legacy_attn_mask_utils`` under the old name:
the same functions with the 5.23 behaviour. Outside remote-code loading the name does not exist.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit.remote_code import LOADER, restoring

MODULE = "transformers.modeling_attn_mask_utils"


def _module() -> Any:
    import importlib
    import types

    source = importlib.import_module("hf_genfix._patches.remote_code.shared.legacy_attn_mask_utils")
    module = types.ModuleType(MODULE, source.__doc__)
    module.__dict__.update({k: v for k, v in vars(source).items() if not k.startswith("__")})
    module.__file__ = source.__file__
    return module


def install(patcher: Any) -> None:
    patcher.wrap(LOADER, restoring(modules={MODULE: _module}))
