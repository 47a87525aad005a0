"""The environment toggles, read once when hf_genfix is imported.

Parsing is all-or-nothing: a malformed value, an ``HF_GENFIX_*`` name that matches no patch, or a name that is
ours misspelt (``hf_genfix``, ``HF_GENFIXX``, ``HF_GEN_FIX_...``) is a ``ConfigError`` before a single hook is
registered, so a typo never leaves a half-activated process. What a program does with that error is
``_activation``'s choice (``Config.inactive``): stay exactly upstream and say so; the ``hf-genfix`` command exits 2.
"""

# Kept to the standard library's always-loaded modules: this runs on `import hf_genfix`, whose budget is 5 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Mapping

PREFIX = "HF_GENFIX"
_TRUE = ("on", "1", "true", "yes")
_FALSE = ("off", "0", "false", "no")
_TOGGLES = ("auto",) + _TRUE + _FALSE
_LOG_LEVELS = ("debug", "info", "warning", "error")
# Names under HF_GENFIX_ that are settings, not patch ids.
RESERVED = ("STRICT", "LOG")


class ConfigError(ValueError):
    """An HF_GENFIX* environment variable hf_genfix cannot accept.

    ``variable``, ``value``, ``accepted`` (the accepted values, or the known names when the name is unknown) and
    ``closest`` (the closest accepted value or known name, or None) let ``hf-genfix`` say it in one line."""

    def __init__(self, message: str, variable: str = "", value: str = "", accepted: tuple = (),
                 closest: "str | None" = None):
        super().__init__(message)
        self.variable, self.value, self.accepted, self.closest = variable, value, tuple(accepted), closest


def manifest_dir() -> str:
    """Where the catalog is: ``patches/<family>/<id>/manifest.toml`` (and the catalog's data files)."""
    import os

    # A wheel carries the catalog inside the package (hf_genfix/_patches, with its data files); a source checkout
    # (editable install) has it at the top of the repository, where the design card puts it.
    here = os.path.dirname(os.path.abspath(__file__))
    packaged = os.path.join(here, "_patches")
    if os.path.isfile(os.path.join(packaged, "verified.json")):
        return packaged
    return os.path.join(os.path.dirname(os.path.dirname(here)), "patches")


def patch_ids() -> "list[str]":
    """The ids of the shipped patches: a patch's folder, ``patches/<family>/<id>/``, is its id with ``_`` for
    ``-`` (tests/test_manifests.py checks it)."""
    import os

    names: "list[str]" = []
    try:
        with os.scandir(manifest_dir()) as families:
            for family in families:
                if family.is_dir():
                    names += [name for name in os.listdir(family.path)
                              if os.path.isfile(os.path.join(family.path, name, "manifest.toml"))]
    except FileNotFoundError:
        return []
    return sorted(name.replace("_", "-") for name in names)


def env_name(patch_id: str) -> str:
    """`sliding-window-crop` -> `HF_GENFIX_SLIDING_WINDOW_CROP`."""
    return f"{PREFIX}_{patch_id.upper().replace('-', '_')}"


def is_ours(name: str) -> bool:
    """Whether an environment variable's name is an hf_genfix setting, or one misspelt: any case, any
    underscores (``hf_genfix``, ``HF_GENFIXX``, ``HFGENFIX_LOG``, ``HF_GEN_FIX_RIGHT_PADDING``). Environment
    names are case-sensitive, so ``hf_genfix=off`` would otherwise be ignored without a word while the user
    believes hf_genfix is off. A name that starts with ``_`` is private (``_HF_GENFIX_RUN_PID``: ``hf-genfix run``
    talking to its children), not a setting."""
    return not name.startswith("_") and name.upper().replace("_", "").replace("-", "").startswith("HFGENFIX")


class Config:
    """What the environment asked for. ``toggles`` maps patch id -> "auto" | "on" | "off" (absent: "auto").

    ``error`` is the ``ConfigError`` that made this config inactive (``Config.inactive``), else None;
    ``notes`` are the warnings parsing raised (an explicit per-patch ``on`` that ``HF_GENFIX=off`` overrides)."""

    __slots__ = ("enabled", "strict", "log_level", "toggles", "error", "notes")

    def __init__(self, enabled: bool = True, strict: bool = False, log_level: "str | None" = None,
                 toggles: "Mapping[str, str] | None" = None, error: "ConfigError | None" = None,
                 notes: tuple = ()):
        self.enabled, self.strict, self.log_level = enabled, strict, log_level
        self.toggles = dict(toggles or {})
        self.error, self.notes = error, tuple(notes)

    @classmethod
    def inactive(cls, error: "ConfigError", environ: "Mapping[str, str]") -> "Config":
        """The config of a program whose environment was rejected: no patch is installed (the process runs
        exactly upstream's code), and every status says why. ``HF_GENFIX_LOG`` is still honoured where it
        parses, so a debugging user keeps their log level."""
        level = environ.get(f"{PREFIX}_LOG", "").strip().lower()
        return cls(enabled=False, log_level=level if level in _LOG_LEVELS else None, error=error)

    def off_reason(self) -> str:
        """Why no patch is installed when ``enabled`` is False."""
        if self.error is None:
            return "HF_GENFIX=off"
        return (f"{self.error.variable}={self.error.value!r} is not accepted, so hf_genfix installed no patch "
                f"(upstream behaviour): {self.error}")

    def __repr__(self) -> str:
        return (f"Config(enabled={self.enabled}, strict={self.strict}, log_level={self.log_level!r}, "
                f"toggles={self.toggles!r})")

    def toggle(self, patch_id: str) -> str:
        return self.toggles.get(patch_id, "auto")

    @classmethod
    def from_environ(cls, environ: "Mapping[str, str]", patch_ids: "Iterable[str]") -> "Config":
        by_name = {env_name(pid): pid for pid in patch_ids}
        known = [PREFIX] + [f"{PREFIX}_{r}" for r in RESERVED] + sorted(by_name)
        enabled, strict, log_level, toggles = True, False, None, {}
        for name in sorted(environ):
            if not is_ours(name):
                continue
            raw = environ[name]
            value = raw.strip().lower()
            if name == PREFIX:
                enabled = _boolean(name, raw, value, default=True)
            elif name == f"{PREFIX}_STRICT":
                strict = _boolean(name, raw, value, default=False)
            elif name == f"{PREFIX}_LOG":
                if value and value not in _LOG_LEVELS:
                    raise _bad(name, raw, _LOG_LEVELS)
                log_level = value or None
            elif name in by_name:
                if value not in _TOGGLES + ("",):
                    raise _bad(name, raw, ("auto", "on", "off") + _TRUE[1:] + _FALSE[1:])
                toggles[by_name[name]] = (
                    "auto" if value in ("", "auto") else "on" if value in _TRUE else "off"
                )
            else:
                import difflib

                close = difflib.get_close_matches(name.upper(), known, n=1, cutoff=0.0)
                # One short line: the closest name, and where the full list is (``accepted`` still has it).
                raise ConfigError(
                    f"{name}={raw!r}: no hf_genfix patch or setting has this name"
                    + (f"; did you mean {close[0]}?" if close else "")
                    + " `hf-genfix list` prints every name.",
                    name, raw, tuple(known), close[0] if close else None,
                )
        notes = ()
        forced_on = sorted(env_name(pid) for pid, toggle in toggles.items() if toggle == "on")
        if not enabled and forced_on:
            notes = (f"{PREFIX}=off overrides {', '.join(forced_on)}=on: no patch is installed",)
        return cls(enabled=enabled, strict=strict, log_level=log_level, toggles=toggles, notes=notes)


def strict_requested(environ: "Mapping[str, str]") -> bool:
    """``HF_GENFIX_STRICT`` is on, read on its own (the rest of the environment may not parse)."""
    return environ.get(f"{PREFIX}_STRICT", "").strip().lower() in _TRUE


def _boolean(name: str, raw: str, value: str, *, default: bool) -> bool:
    # An empty value is how shells spell "unset" (`HF_GENFIX= python app.py`).
    if value == "":
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise _bad(name, raw, _TRUE + _FALSE)


def _bad(name: str, raw: str, accepted: "Iterable[str]") -> "ConfigError":
    import difflib

    accepted = tuple(accepted)
    close = difflib.get_close_matches(raw.strip().lower(), accepted, n=1)
    return ConfigError(
        f"{name}={raw!r} is not an accepted value; accepted (any case): {', '.join(accepted)}"
        + (f"; did you mean {close[0]}?" if close else ""),
        name, raw, accepted, close[0] if close else None,
    )
