"""Remote code, for the patches of every family that correct it: which classes are remote code, what they use, and
serving removed names to them only.

Remote code is what ``trust_remote_code=True`` loads: transformers executes a repo's ``modeling_*.py`` /
``configuration_*.py`` as modules named ``transformers_modules.<repo>.<file>``, always through
``transformers.dynamic_module_utils.get_class_in_module`` (every release measured, 4.40 - 5.24). The patches
that bring back a removed name wrap that function: while it executes a remote module, the names are served
to the thread executing it only (a module through a ``sys.meta_path`` finder that answers that thread, an
attribute through a module ``__getattr__`` (PEP 562) that answers that thread), and afterwards they are gone
again (also from ``sys.modules``), so that nothing but the remote module that imported them sees them. Remote
code that imports a removed name only later, inside a function, is not served.

Per thread, not by setting the attributes: set on the module, ``transformers.utils.is_torch_fx_available`` or
``transformers.LogitsWarper`` were there for every thread while one loaded remote code, and libraries that
feature-detect with ``hasattr`` would have taken another path for that moment. (A served module sits in
``sys.modules`` while the remote module executes, as the import system puts it there; an import of that removed
module by another thread in that moment would find it.)
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import weakref
from typing import Any, Callable, Mapping

from .._fork import hold_across_fork

REMOTE_PREFIX = "transformers_modules"
LOADER = "transformers.dynamic_module_utils:get_class_in_module"
_LOCK = threading.RLock()
# A fork waits for a remote module's import to finish, so a child never keeps names served to it (nor the lock).
hold_across_fork(_LOCK)


def is_remote(cls: type) -> bool:
    """Whether ``cls`` was defined by a module that ``trust_remote_code`` loaded."""
    return (getattr(cls, "__module__", "") or "").startswith(REMOTE_PREFIX)


def called_from_remote_code(depth: int = 2) -> bool:
    """Whether the nearest caller outside hf_genfix and wrapt (``depth`` frames up from the caller of this
    function) is remote code."""
    return caller_module(depth + 1).startswith(REMOTE_PREFIX)


def caller_module(depth: int = 2) -> str:
    """The module name of the nearest caller outside hf_genfix and wrapt, ``depth`` frames up from the caller of
    this function ('' when there is none)."""
    frame = sys._getframe(depth)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(("hf_genfix.", "wrapt")):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "") if frame is not None else ""


def module_globals(cls: type) -> Mapping[str, Any]:
    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    return vars(module) if module is not None else {}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``{module name: factory}`` (factory() -> a module object) to imports that find nothing else."""

    def __init__(self, modules: Mapping[str, Callable[[], Any]]):
        self.modules = dict(modules)
        self.served: list[Any] = []
        self.thread = threading.get_ident()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self.modules or threading.get_ident() != self.thread:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: Any) -> Any:
        module = self.modules[spec.name]()
        self.served.append(module)
        return module

    def exec_module(self, module: Any) -> None:
        return None


def restoring(modules: Mapping[str, Callable[[], Any]] | None = None,
              names: Mapping[str, Mapping[str, Callable[[], Any]]] | None = None) -> Callable:
    """A wrapper for ``get_class_in_module`` that serves removed ``modules`` and module attributes ``names``
    (``{module: {name: factory}}``) while a remote module is executed. Only what is missing is served."""
    modules = {m: f for m, f in (modules or {}).items() if not _exists(m)}
    names = dict(names or {})

    def wrapper(wrapped: Callable, instance: Any, args: tuple, kwargs: dict) -> Any:
        with _LOCK:
            finder = _Finder(modules) if modules else None
            if finder is not None:
                sys.meta_path.append(finder)  # last: a module that exists is always found first
            added: list[tuple[Any, Any, Any]] = []
            try:
                for module_name, attrs in names.items():
                    module = sys.modules.get(module_name) or importlib.import_module(module_name)
                    values = {attr: factory() for attr, factory in attrs.items() if not _has(module, attr)}
                    if values:
                        previous = vars(module).get("__getattr__")
                        hook = _serving(module.__name__, values, previous)
                        module.__getattr__ = hook
                        added.append((module, previous, hook))
                return wrapped(*args, **kwargs)
            finally:
                for module, previous, hook in reversed(added):
                    if vars(module).get("__getattr__") is hook:
                        if previous is None:
                            del module.__getattr__
                        else:
                            module.__getattr__ = previous
                if finder is not None:
                    sys.meta_path.remove(finder)
                    for module in finder.served:
                        _forget(module)

    return wrapper


def _serving(module_name: str, values: Mapping[str, Any], previous: Any) -> Callable[[str], Any]:
    """A module ``__getattr__`` (consulted only for names the module lacks) that gives ``values`` to the calling
    thread alone; every other thread gets what it got before (the module's own ``__getattr__``, or the
    AttributeError after which a lazy module's class resolves the name as usual)."""
    thread = threading.get_ident()

    def __getattr__(name: str) -> Any:
        if name in values and threading.get_ident() == thread:
            return values[name]
        if previous is not None:
            return previous(name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__


def _forget(module: Any) -> None:
    """Take a served module out of ``sys.modules`` and off its parent package (the import system put it on both)."""
    name = module.__name__
    if sys.modules.get(name) is module:
        del sys.modules[name]
    parent_name, _, child = name.rpartition(".")
    parent = sys.modules.get(parent_name)
    if parent is not None and vars(parent).get(child) is module:
        delattr(parent, child)


def _exists(module_name: str) -> bool:
    if module_name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        return False


def _has(module: Any, attr: str) -> bool:
    if attr in vars(module):
        return True
    try:  # transformers' lazy top-level module resolves names on first access
        getattr(module, attr)
        return True
    except (AttributeError, ImportError, ModuleNotFoundError):
        return False


# What old remote code uses that transformers removed or changed: (pattern in the module's source, what it is,
# the release that removed or changed it, the hf_genfix patch that restores it). Read from the module's text, so
# that a patch translates only for code that relies on the old API (and check_generation can say which).
REMOVED_API: tuple[tuple[str, str, str, str], ...] = (
    (r"\.get_usable_length\(", "Cache.get_usable_length()", "4.54.0", "remote-code-cache-api"),
    (r"\.seen_tokens\b", "Cache.seen_tokens", "4.54.0", "remote-code-cache-api, legacy-cache"),
    (r"\.get_max_length\(", "Cache.get_max_length() (4.40 meaning)", "4.49.0", "legacy-cache"),
    (r"\.from_legacy_cache\(", "DynamicCache.from_legacy_cache()", "5.0.0", "remote-code-cache-api"),
    (r"\.to_legacy_cache\(", "Cache.to_legacy_cache()", "5.0.0", "remote-code-cache-api"),
    (r"\.(key|value)_cache\b", "Cache.key_cache / value_cache", "4.56.0", "remote-code-cache-api"),
    (r"past_key_values\[0\]\[0\]", "tuple caches (past_key_values[0][0])", "4.56.0", "remote-code-cache-api"),
    (r"modeling_attn_mask_utils", "transformers.modeling_attn_mask_utils", "5.24.0", "remote-code-attn-mask-utils"),
    (r"\bLogitsWarper\b", "LogitsWarper", "4.49.0", "remote-code-removed-names"),
    (r"\bis_torch_fx_available\b", "is_torch_fx_available", "5.0.0", "remote-code-removed-names"),
    (r"\b(Disjunctive|Phrasal)Constraint\b|\bConstraintListState\b", "constrained beam search classes", "5.0.0",
     "remote-code-removed-names"),
    (r"generation\.beam_(constraints|search)\b", "transformers.generation.beam_constraints / beam_search", "5.0.0",
     "remote-code-removed-names"),
    (r"\bis_flash_attn_greater_or_equal_2_10\b", "is_flash_attn_greater_or_equal_2_10", "5.4.0 (back in 5.5.0)",
     "remote-code-removed-names"),
    (r"_tied_weights_keys\s*=\s*\[", "_tied_weights_keys as a list (with tie_word_embeddings)", "5.0.0",
     "remote-code-tied-weights"),
    (r"standardize_cache_format", "_extract_past_from_model_output(standardize_cache_format=...)", "4.42.0",
     "remote-code-extract-past"),
    (r"\._extract_past_from_model_output\(", "_extract_past_from_model_output()", "4.49.0",
     "remote-code-model-methods"),
    (r"\.get_head_mask\(", "PreTrainedModel.get_head_mask()", "5.0.0", "remote-code-model-methods"),
    (r"\.get_extended_attention_mask\(", "PreTrainedModel.get_extended_attention_mask()", "5.17.0",
     "remote-code-model-methods"),
    (r"\.invert_attention_mask\(", "PreTrainedModel.invert_attention_mask()", "5.17.0", "remote-code-model-methods"),
    (r"\._get_logits_warper\(", "GenerationMixin._get_logits_warper()", "4.42.0 (device required), 4.45.0",
     "remote-code-logits-warper, remote-code-model-methods"),
    (r"rope_scaling\[[\"']type[\"']\]", "config.rope_scaling[\"type\"]", "5.0.0", "remote-code-rope-scaling"),
    (r"config\.max_length\b", "config.max_length (generation defaults on the config)", "5.0.0",
     "remote-code-config-generation-defaults"),
    (r"config\.use_cache\b", "config.use_cache (from config.json)", "5.0.0", "remote-code-config-defaults"),
)

_SOURCES: dict[str, str] = {}
_FOUND: "weakref.WeakKeyDictionary[type, list]" = weakref.WeakKeyDictionary()


def module_source(cls: type) -> str:
    """The text of the module that defined ``cls`` ('' when it cannot be read)."""
    name = getattr(cls, "__module__", "") or ""
    text = _SOURCES.get(name)
    if text is None:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        try:
            with open(path, encoding="utf-8") as handle:  # type: ignore[arg-type]
                text = handle.read()
        except (OSError, TypeError):
            text = ""
        _SOURCES[name] = text
    return text


def remote_sources(cls: type) -> list[str]:
    """The texts of the remote modules behind ``cls``: its remote bases' modules and its configuration's."""
    classes = [c for c in getattr(cls, "__mro__", (cls,)) if is_remote(c)]
    config_class = getattr(cls, "config_class", None)
    if isinstance(config_class, type) and is_remote(config_class):
        classes.append(config_class)
    return list(dict.fromkeys(module_source(c) for c in classes))


def removed_api(cls: type) -> list[tuple[str, str, str]]:
    """(what, removed or changed in, restoring patch) for each old API the remote module of ``cls`` uses; for
    the class and its remote bases (the configuration's module is read through ``config_class``)."""
    import re

    found = _FOUND.get(cls)
    if found is not None:
        return found
    seen: dict[str, tuple[str, str, str]] = {}
    for text in remote_sources(cls):
        for pattern, what, release, patch in REMOVED_API:
            if what not in seen and re.search(pattern, text):
                seen[what] = (what, release, patch)
    found = _FOUND[cls] = list(seen.values())
    return found


def uses(cls: type, *whats: str) -> bool:
    """Whether the remote module of ``cls`` uses any of the ``REMOVED_API`` entries named ``whats``."""
    found = {what for what, _, _ in removed_api(cls)}
    return any(w in found for w in whats)


# -- attributes remote configurations read but 5.x (or 4.56+) no longer gives them -------------------------------
# A value a patch lends a remote configuration must not become an attribute: ``to_dict`` copies ``__dict__``, so
# it would be written into the ``config.json`` that ``save_pretrained`` writes, where upstream writes nothing (and
# a copy of the configuration would carry it as if the user had set it). It is served instead by a
# ``__getattr__``, which Python calls only when the ordinary lookup fails: nothing is stored, nothing is saved,
# copies and pickles behave alike, and an attribute the user (or the remote code) sets is an ordinary one, saved as
# upstream saves it. The ``__getattr__`` is given to the remote-code configuration classes only, as they are
# loaded (``Patcher.add_to_subclasses``), not to ``PretrainedConfig``: every other configuration's attribute misses
# (transformers probes configs with ``getattr(config, name, default)`` at every step) cost nothing. The first patch
# that needs it adds it; each patch registers the names it serves (while it is installed and not ``disabled()``).
_FALLBACKS: dict[str, tuple[Any, Callable[[Any], Any]]] = {}


def serve_config_attribute(patcher: Any, hook: str, name: str, getter: Callable[[Any], Any]) -> None:
    """Serve ``name`` on remote-code configurations that lack it, as ``getter(config)`` (which raises
    ``AttributeError`` where it has nothing to give). ``hook``: the manifest's ``"module:PretrainedConfig"``."""
    from .._patcher import resolve

    _, _, config_class = resolve(hook)
    if vars(config_class).get("__getattr__") is not None:
        from .._errors import Drift

        raise Drift(f"{hook} has a __getattr__ of its own: cannot serve {name} there")
    if _COVERED not in vars(config_class):
        # Marks, until this patch is taken off, that remote configuration classes get the __getattr__.
        patcher.add(hook, _COVERED, True)
        patcher.add_to_subclasses(hook, "__getattr__", _config_getattr, where=is_remote)
    # The flag is this patch's own change (revert() takes it off with the patch), and what says it is installed.
    patcher.add(hook, _served(name), True)
    _FALLBACKS[name] = (patcher, getter)


_COVERED = "_hf_genfix_remote_getattr"


def _served(name: str) -> str:
    return f"_hf_genfix_serves_{name}"


def _config_getattr(self: Any, name: str) -> Any:
    entry = _FALLBACKS.get(name)
    if entry is not None and is_remote(type(self)) and getattr(type(self), _served(name), False):
        patcher, getter = entry
        if patcher.on():
            return getter(self)
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
