"""What ``import hf_genfix`` does, kept within its 5 ms budget.

It reads the environment (all-or-nothing: a rejected environment makes hf_genfix inactive, see ``config()``) and
waits for
transformers (``_hooks``). Only when transformers is imported (or already is) does it load the registry, the
manifests, wrapt and packaging, and watch the patches' target modules: a program that never imports
transformers pays for a directory listing and an environment scan, nothing more.
"""

import os
import sys

from . import _hooks
from ._config import Config, ConfigError, patch_ids, strict_requested

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._registry import Registry

_config: "Config | None" = None
_registry: "Registry | None" = None
_wanted = False  # activate() was called and revert() has not been since


def config() -> "Config":
    """The environment's config, parsed once.

    A rejected environment (a mistyped name or value) does not take the program down: ddtrace and
    OpenTelemetry never kill an application over their configuration, and one torchrun rank dying over a typo
    takes the whole job with it. The program runs exactly upstream's code (nothing is hooked: the choice that
    loses nothing the user asked for, since ``HF_GENFIX=offf`` meant "off"), ``report()`` logs one ERROR line, and
    every ``status()`` record carries the reason. ``HF_GENFIX_STRICT=on`` keeps the old fail-fast ``ConfigError``."""
    global _config
    if _config is None:
        try:
            parsed = Config.from_environ(os.environ, patch_ids())
        except ConfigError as exc:
            if strict_requested(os.environ):
                raise
            parsed = Config.inactive(exc, os.environ)
        if parsed.log_level is not None:
            _configure_logging(parsed.log_level)
        _config = parsed
    return _config


def report() -> None:
    """Say what the environment made of hf_genfix: one ERROR line for a rejected environment, one WARNING per
    note (the ``hf-genfix`` command prints its own line instead and does not call this)."""
    cfg = config()
    if cfg.error is None and not cfg.notes:
        return
    import logging

    log = logging.getLogger("hf_genfix")
    if cfg.error is not None:
        message = str(cfg.error).rstrip(".")
        if "hf-genfix list" not in message:
            message += "; `hf-genfix list` prints every accepted name"
        log.error("hf_genfix is inactive (the program runs upstream transformers, unpatched): %s", message)
    for note in cfg.notes:
        log.warning("hf_genfix: %s", note)


def registry() -> "Registry":
    """The process-wide registry, created on first need (it survives ``importlib.reload(hf_genfix)``)."""
    global _registry
    if _registry is None:
        from ._manifest import load_dir
        from ._registry import Registry

        _registry = Registry(load_dir(), config())
    return _registry


def activate() -> None:
    global _wanted
    cfg = config()
    _wanted = True
    if not cfg.enabled:
        return
    _hooks.watch(["transformers"], _Transformers, last=True)
    if "transformers" in sys.modules or _registry is not None:
        registry().activate()


def revert() -> None:
    global _wanted
    _wanted = False
    registry().revert()


class _Transformers:
    """Listens for transformers: its import activates the registry (created then) while activate() holds."""

    @staticmethod
    def on_import(name: str) -> None:
        if name == "transformers" and _wanted and (_registry is None or not _registry.active):
            registry().activate(trigger=name)


def _configure_logging(level: str) -> None:
    # transformers' convention (transformers.utils.logging._configure_library_root_logger): the library's root
    # logger gets its own stderr handler and stops propagating, so a program that also calls
    # logging.basicConfig() sees each line once, not once per handler.
    import logging

    log = logging.getLogger("hf_genfix")
    log.setLevel(level.upper())
    if not any(getattr(h, "_hf_genfix", False) for h in log.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler._hf_genfix = True  # type: ignore[attr-defined]
        log.addHandler(handler)
    log.propagate = False
