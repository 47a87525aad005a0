"""remote-code-removed-names: remote code importing helpers that 5.0 removed no longer loads.

The defect. Remote-code files import names that transformers 5.0.0 removed (4.57.6 has all of them):

- ``is_torch_fx_available`` from ``transformers.utils.import_utils`` (and ``transformers.utils``): DeepSeek-V2
  and MiniCPM wrap their mask helper with ``torch.fx.wrap`` when it is true. 5.0:
  ``ImportError: cannot import name 'is_torch_fx_available'``.
- the constrained-beam-search classes ``Constraint``, ``ConstraintListState``, ``DisjunctiveConstraint``,
  ``PhrasalConstraint`` from ``transformers`` (files that copied 4.x generation code import them).

Detection (``probe``): the tiny DeepSeek-V2-style remote repo of ``hf_genfix.oracles.legacy_models`` must load
and generate like its no-cache reference.

Correction. While ``get_class_in_module`` executes a remote module, the missing names are set on their modules,
and taken off again afterwards: the remote module keeps what it imported, nothing else sees them.
``is_torch_fx_available()`` has its 4.57 meaning (torch is available). 5.0 removed constrained beam search from
``generate()``, so the constraint classes are placeholders that can be imported and subclassed but raise
``NotImplementedError`` when instantiated (code that only imports them loads; code that uses them fails as
loudly as it does without hf_genfix).
"""

from __future__ import annotations

from typing import Any

from ._remote_code import LOADER, restoring


def _is_torch_fx_available() -> bool:
    from transformers.utils import is_torch_available

    return bool(is_torch_available())


def _removed_constraint(name: str) -> type:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            f"transformers.{name}: constrained beam search was removed in transformers 5.0 (hf_genfix restores "
            "the name for remote code that imports it, not the feature)"
        )

    return type(name, (), {"__init__": __init__, "__module__": "transformers.generation"})


_CONSTRAINTS = ("Constraint", "ConstraintListState", "DisjunctiveConstraint", "PhrasalConstraint")

NAMES = {
    "transformers.utils.import_utils": {"is_torch_fx_available": lambda: _is_torch_fx_available},
    "transformers.utils": {"is_torch_fx_available": lambda: _is_torch_fx_available},
    "transformers": {name: (lambda name=name: _removed_constraint(name)) for name in _CONSTRAINTS},
}


def install(patcher: Any) -> None:
    patcher.wrap(LOADER, restoring(names=NAMES))


def probe() -> dict[str, Any]:
    from ..oracles.legacy_models import check_family

    return check_family("deepseek")
