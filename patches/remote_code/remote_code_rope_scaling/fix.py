"""remote-code-rope-scaling: remote code reading ``config.rope_scaling["type"]`` fails on 5.x configs.

The defect. Remote configurations and models written for 4.x read ``config.rope_scaling`` as they assigned it:
None for plain RoPE, else a dict keyed ``"type"`` and ``"factor"`` (InternLM2, DeepSeek-V2, MiniCPM, old Phi-3:
``if self.config.rope_scaling is None: ... else: scaling_type = self.config.rope_scaling["type"]``). From 5.0.0
``rope_scaling`` is an alias of ``rope_parameters``, which every config fills in: a config that set None reads
``{"rope_theta": ..., "rope_type": "default"}``, so the old code takes the scaled branch and fails with
``KeyError: 'type'``; a given dict gains ``rope_theta`` and ``rope_type`` (length checks fail). 4.57.6 returns
what was assigned.

Detection (``probe``): the tiny InternLM2-style remote repo (no ``rope_scaling`` in its config.json) must load
and generate like its no-cache reference.

Correction. The ``rope_scaling`` property reads, for instances of remote-code configuration classes only, the
4.x value: None where the parameters are the synthesized defaults, else the dict without the ``rope_theta``
that 5.x folds in and with ``"type"`` next to ``"rope_type"``. Its setter, the deprecation warning 5.x emits
there, and every other configuration class are unchanged.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit.remote_code import is_remote

TARGET = "transformers.configuration_utils:PretrainedConfig.rope_scaling"


def old_rope_scaling(params: Any) -> Any:
    """The 4.x reading of 5.x ``rope_parameters``."""
    if not isinstance(params, dict) or any(isinstance(v, dict) for v in params.values()):
        return params  # None, or per-layer-type parameters that no 4.x code wrote
    if params.get("rope_type", params.get("type", "default")) == "default" and set(params) <= {
        "rope_type", "type", "rope_theta"
    }:
        return None
    old = {k: v for k, v in params.items() if k != "rope_theta"}
    if "type" not in old and "rope_type" in old:
        old["type"] = old["rope_type"]
    return old


def install(patcher: Any) -> None:
    current = patcher.require(TARGET)
    if not isinstance(current, property) or current.fget is None:
        from hf_genfix.toolkit import Drift

        raise Drift(f"{TARGET} is not a property: {current!r}")

    def fget(self: Any) -> Any:
        value = current.fget(self)
        return old_rope_scaling(value) if is_remote(type(self)) and patcher.on() else value

    patcher.replace(TARGET, property(fget, current.fset, current.fdel, current.__doc__))
