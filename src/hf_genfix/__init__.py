"""hf_genfix: keeps Hugging Face ``generate()`` correct across transformers releases.

``import hf_genfix`` reads the HF_GENFIX* environment once (a mistyped name or value: hf_genfix stays inactive,
one ERROR line says why and ``status()`` too; ``ConfigError`` instead under ``HF_GENFIX_STRICT=on``) and waits for
transformers; it imports neither torch nor transformers. Once transformers is imported, the
patch manifests are loaded and their target modules hooked: each patch is decided when its target modules are
imported (or at once, if they already were), and only patches whose defect the installed release really has are
installed. See ``hf_genfix.status()`` and ``hf-genfix list``.
"""

# No `from __future__ import annotations` here nor in _activation, _config, _hooks: a program's `import hf_genfix`
# runs them, and a `__future__.py` in the program's folder would be imported in place of the standard library's.
# Annotations that name type-only imports are strings instead.
from . import _activation
from ._config import ConfigError
from ._errors import Drift, HFGenfixWarning, ManifestError, PatchError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ContextManager

    from .catalog import PatchStatus

__all__ = [
    "ConfigError",
    "Drift",
    "HFGenfixWarning",
    "ManifestError",
    "PatchError",
    "PatchStatus",
    "activate",
    "disabled",
    "forced",
    "recording",
    "revert",
    "status",
    # helpers (imported on first use; they need torch)
    "BatchPaddingPolicy",
    "GenerationInputPrep",
    "DecodeState",
    "SlidingWindowPolicy",
]

__version__ = "0.1.0"


def status() -> "list[PatchStatus]":
    """One record per known patch: id, state, reason, targets, affected range, transformers version, and the
    calls it saw and changed while recording was on (see ``recording()``)."""
    records = _activation.registry().status()
    from . import _record

    if not _record._counts:
        return records
    from dataclasses import replace

    return [replace(r, calls_seen=_record.counts(r.id)[0], calls_changed=_record.counts(r.id)[1])
            for r in records]


def recording() -> "ContextManager[Any]":
    """``with hf_genfix.recording() as rec:`` -- inside the block, every call a patch changes is recorded:
    ``rec.lines`` has one line per changed call ("right-padding: realigned 3 of 8 rows"), ``rec.counts`` maps
    patch id -> (calls seen, calls changed), and ``status()`` counts them too. Off outside the block (unless
    ``HF_GENFIX_LOG=debug``, which records the whole process and logs each line at DEBUG); when off it costs one
    flag check per patched call. The switch is process-wide: while a block is open, calls from other threads
    are recorded in it too."""
    from . import _record

    return _record.recording()


def activate() -> None:
    """Register the import hooks again after ``revert()`` (``import hf_genfix`` already does this once)."""
    _activation.activate()


def revert() -> None:
    """Restore every patched object to the identical original and stop patching on later imports."""
    _activation.revert()


def disabled(*patch_ids: str) -> "ContextManager[None]":
    """``with hf_genfix.disabled("right-padding"):`` -- those patches (all when none named) are off inside."""
    return _activation.registry().disabled(*patch_ids)


def forced(*patch_ids: str) -> "ContextManager[None]":
    """``with hf_genfix.forced("prepare-inputs"):`` -- install them even where the release is not affected."""
    return _activation.registry().forced(*patch_ids)


_LAZY = {
    "PatchStatus": "hf_genfix.catalog",
    "BatchPaddingPolicy": "hf_genfix.helpers.padding",
    "GenerationInputPrep": "hf_genfix.helpers.decode",
    "DecodeState": "hf_genfix.helpers.decode",
    "SlidingWindowPolicy": "hf_genfix.helpers.sliding_window",
}


def __getattr__(name: str) -> "Any":
    # The registry needs wrapt and packaging, the helpers torch: none is loaded until first used.
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hf_genfix' has no attribute {name!r}")


def _launched_as_cli() -> bool:
    """Whether this process is the ``hf-genfix`` command (console script or ``python -m hf_genfix``), decided
    while ``hf_genfix`` itself is being imported, before the command's code runs."""
    import os
    import sys

    if os.path.basename(sys.argv[0] if sys.argv else "") in ("hf-genfix", "hf-genfix.exe", "hf-genfix-script.py"):
        return True
    if sys.argv[:1] != ["-m"]:  # `python -m X`: runpy imports X's package while sys.argv[0] is still "-m"
        return False
    orig = list(getattr(sys, "orig_argv", ()))
    for i, arg in enumerate(orig):
        if arg.startswith("-m"):
            module = arg[2:] or (orig[i + 1] if i + 1 < len(orig) else "")
            return module.split(".")[0] == "hf_genfix"
    return False


def _transformers_modules() -> frozenset:
    import sys

    return frozenset(n for n in list(sys.modules) if n == "transformers" or n.startswith("transformers."))


# What of transformers could already have run without hf_genfix (a worker that imports it late):
# ``hf_genfix.workers.report()`` names the target modules among these. Kept by ``importlib.reload(hf_genfix)``.
if "_loaded_before" not in globals():
    _loaded_before = _transformers_modules()

try:
    _activation.activate()
except ConfigError:
    # Only under HF_GENFIX_STRICT=on. The `hf-genfix` command reports a bad environment itself, in one line (and
    # `hf-genfix list` still lists the valid names); a strict program stops at the import, before anything is hooked.
    if not _launched_as_cli():
        raise
else:
    if not _launched_as_cli():  # the command says it in its own line, and exits 2
        _activation.report()
    if _activation.config().log_level == "debug":
        from . import _record

        _record.enable_for_process()
