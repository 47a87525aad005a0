"""remote-code-removed-names: remote code importing names that 4.49 - 5.x removed no longer loads.

The defect. Remote-code files import names that transformers removed:

- ``LogitsWarper`` from ``transformers`` (also ``transformers.generation`` and its ``logits_process``): the
  base class of sampling warpers, which MiniCPM-o-style modeling files import at the top. Removed in 4.49.0
  (4.48.3 has it, deprecated): ``ImportError: cannot import name 'LogitsWarper' from 'transformers'``.

and names that transformers 5.0.0 removed (4.57.6 has all of them):

- ``is_torch_fx_available`` from ``transformers.utils.import_utils`` (and ``transformers.utils``): DeepSeek-V2
  and MiniCPM wrap their mask helper with ``torch.fx.wrap`` when it is true. 5.0:
  ``ImportError: cannot import name 'is_torch_fx_available'``.
- the constrained-beam-search classes ``Constraint``, ``ConstraintListState``, ``DisjunctiveConstraint``,
  ``PhrasalConstraint`` from ``transformers`` and ``transformers.generation``, and the modules that held them and
  the beam scorers, ``transformers.generation.beam_constraints`` and ``transformers.generation.beam_search``
  (files that copied 4.x generation code import them; 4.57.6 has both modules, 5.0.0 neither).
- ``is_torch_greater_or_equal_than_1_12``, ``_1_13`` and ``_2_0`` from ``transformers.pytorch_utils``: the
  real DeepSeek-V2 and MiniCPM modeling files import ``is_torch_greater_or_equal_than_1_13`` at the top. 4.48.0
  and 4.48.1 removed the three (4.48.2 put them back, 4.49 - 5.24 have them): on those two releases neither file
  loads. Found by the tox matrix's 4.48.0 env (``ImportError: cannot import name
  'is_torch_greater_or_equal_than_1_13' from 'transformers.pytorch_utils'``).
- ``is_flash_attn_greater_or_equal_2_10`` from ``transformers.utils``: DeepSeek-V2/V3, MiniCPM, old Phi-3,
  Phi-3-vision, Florence-2 and moondream2 import it at the top of their modeling file. 5.4.0 alone lacks it
  (5.3.0 has it; 5.5.0 brought it back as a deprecated alias): on 5.4.0 none of them loads.

Detection (``probe``): the tiny DeepSeek-V2-style and MiniCPM-style remote repos of
``hf_genfix.oracles.legacy_models`` must load and generate like their no-cache reference.

Correction. While ``get_class_in_module`` executes a remote module, the missing names are set on their modules, and
taken off again afterwards: the remote module keeps what it imported, nothing else sees them. The
``is_torch_greater_or_equal_than_*`` flags are 4.47's booleans (the installed torch's base version compared).
``LogitsWarper`` is 4.48's abstract base (subclasses define ``__call__``; creating one logs 4.48's deprecation
warning), ``is_torch_fx_available()`` has its 4.57 meaning (torch is available),
``is_flash_attn_greater_or_equal_2_10()`` its 5.3 meaning (flash-attn installed at 2.1.0 or later). 5.0 removed
constrained beam search from ``generate()``, so the constraint classes are placeholders that can be imported and
subclassed but raise ``NotImplementedError`` when instantiated (code that only imports them loads; code that uses
them fails as loudly as it does without hf_genfix).
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit.remote_code import LOADER, restoring


def _is_torch_fx_available() -> bool:
    from transformers.utils import is_torch_available

    return bool(is_torch_available())


def _is_flash_attn_greater_or_equal_2_10() -> bool:
    import importlib.metadata

    from packaging import version

    try:
        return version.parse(importlib.metadata.version("flash_attn")) >= version.parse("2.1.0")
    except importlib.metadata.PackageNotFoundError:
        return False


def _removed_constraint(name: str) -> type:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            f"transformers.{name}: removed in transformers 5.0 with constrained beam search and the beam scorers "
            "(hf_genfix restores the name for remote code that imports it, not the feature)"
        )

    return type(name, (), {"__init__": __init__, "__module__": "transformers.generation"})


def _logits_warper() -> type:
    def __init__(self: Any) -> None:
        from transformers.utils import logging

        logging.get_logger("transformers.generation.logits_process").warning_once(
            "`LogitsWarper` is deprecated and will be removed in v4.48. Your class should inherit `LogitsProcessor` "
            "instead, which has the same properties and interface."
        )

    def __call__(self: Any, input_ids: Any, scores: Any) -> Any:
        raise NotImplementedError(
            f"{self.__class__} is an abstract class. Only classes inheriting this class can be called."
        )

    doc = "Abstract base class for all logit warpers that can be applied during generation with multinomial sampling."
    return type("LogitsWarper", (), {"__init__": __init__, "__call__": __call__, "__doc__": doc,
                                     "__module__": "transformers.generation.logits_process"})


_CONSTRAINTS = ("Constraint", "ConstraintListState", "DisjunctiveConstraint", "PhrasalConstraint")
_SCORERS = ("BeamScorer", "BeamSearchScorer", "ConstrainedBeamSearchScorer")
_PLACEHOLDERS = {name: (lambda name=name: _removed_constraint(name)) for name in _CONSTRAINTS}
_FLASH = {"is_flash_attn_greater_or_equal_2_10": lambda: _is_flash_attn_greater_or_equal_2_10}

_WARPER = {"LogitsWarper": _logits_warper}


def _torch_at_least(floor: str) -> Any:
    def flag() -> bool:
        import torch
        from packaging import version

        return version.parse(version.parse(torch.__version__).base_version) >= version.parse(floor)

    return flag


_TORCH_FLAGS = {f"is_torch_greater_or_equal_than_{v.replace('.', '_')}": _torch_at_least(v)
                for v in ("1.12", "1.13", "2.0")}

NAMES = {
    "transformers.utils.import_utils": {"is_torch_fx_available": lambda: _is_torch_fx_available, **_FLASH},
    "transformers.utils": {"is_torch_fx_available": lambda: _is_torch_fx_available, **_FLASH},
    "transformers": {**_PLACEHOLDERS, **_WARPER},
    "transformers.generation": {**_PLACEHOLDERS, **_WARPER},
    "transformers.generation.logits_process": dict(_WARPER),
    "transformers.pytorch_utils": _TORCH_FLAGS,
}


def _module(name: str, classes: tuple[str, ...]) -> Any:
    import types

    module = types.ModuleType(name, f"{name} (removed in transformers 5.0; hf_genfix placeholders for remote code)")
    for cls in classes:
        setattr(module, cls, _removed_constraint(cls))
    return module


MODULES = {
    "transformers.generation.beam_constraints": lambda: _module("transformers.generation.beam_constraints",
                                                                _CONSTRAINTS),
    "transformers.generation.beam_search": lambda: _module("transformers.generation.beam_search", _SCORERS),
}


def install(patcher: Any) -> None:
    patcher.wrap(LOADER, restoring(modules=MODULES, names=NAMES))
