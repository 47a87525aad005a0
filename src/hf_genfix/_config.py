"""The environment toggles, read once when hf_genfix is imported.

Parsing is all-or-nothing: a malformed value or an ``HF_GENFIX_*`` name that matches no patch raises
``ConfigError`` before a single hook is registered, so a typo never leaves a half-activated process.
"""

from __future__ import annotations

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
                 closest: str | None = None):
        super().__init__(message)
        self.variable, self.value, self.accepted, self.closest = variable, value, tuple(accepted), closest


def manifest_dir() -> str:
    """Where the manifests are: ``patches/<family>/<id>.toml``."""
    import os

    # A wheel carries the manifests inside the package; a source checkout (editable install) has them at the
    # top of the repository, where the design card puts them.
    here = os.path.dirname(os.path.abspath(__file__))
    packaged = os.path.join(here, "_patches")
    if os.path.isdir(packaged):
        return packaged
    return os.path.join(os.path.dirname(os.path.dirname(here)), "patches")


def patch_ids() -> list[str]:
    """The ids of the shipped patches (a manifest's file name is its id; tests/test_manifests.py checks it)."""
    import os

    names: list[str] = []
    try:
        with os.scandir(manifest_dir()) as entries:  # patches/<family>/<id>.toml
            for entry in entries:
                names += os.listdir(entry.path) if entry.is_dir() else [entry.name]
    except FileNotFoundError:
        return []
    return sorted(name[:-5] for name in names if name.endswith(".toml"))


def env_name(patch_id: str) -> str:
    """`sliding-window-crop` -> `HF_GENFIX_SLIDING_WINDOW_CROP`."""
    return f"{PREFIX}_{patch_id.upper().replace('-', '_')}"


class Config:
    """What the environment asked for. ``toggles`` maps patch id -> "auto" | "on" | "off" (absent: "auto")."""

    __slots__ = ("enabled", "strict", "log_level", "toggles")

    def __init__(self, enabled: bool = True, strict: bool = False, log_level: str | None = None,
                 toggles: Mapping[str, str] | None = None):
        self.enabled, self.strict, self.log_level = enabled, strict, log_level
        self.toggles = dict(toggles or {})

    def __repr__(self) -> str:
        return (f"Config(enabled={self.enabled}, strict={self.strict}, log_level={self.log_level!r}, "
                f"toggles={self.toggles!r})")

    def toggle(self, patch_id: str) -> str:
        return self.toggles.get(patch_id, "auto")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], patch_ids: Iterable[str]) -> "Config":
        by_name = {env_name(pid): pid for pid in patch_ids}
        known = [PREFIX] + [f"{PREFIX}_{r}" for r in RESERVED] + sorted(by_name)
        enabled, strict, log_level, toggles = True, False, None, {}
        for name in sorted(environ):
            if name != PREFIX and not name.startswith(PREFIX + "_"):
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

                close = difflib.get_close_matches(name, known, n=1, cutoff=0.0)
                # One short line: the closest name, and where the full list is (``accepted`` still has it).
                raise ConfigError(
                    f"{name}={raw!r}: no hf_genfix patch or setting has this name"
                    + (f"; did you mean {close[0]}?" if close else "")
                    + " `hf-genfix list` prints every name.",
                    name, raw, tuple(known), close[0] if close else None,
                )
        return cls(enabled=enabled, strict=strict, log_level=log_level, toggles=toggles)


def _boolean(name: str, raw: str, value: str, *, default: bool) -> bool:
    # An empty value is how shells spell "unset" (`HF_GENFIX= python app.py`).
    if value == "":
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise _bad(name, raw, _TRUE + _FALSE)


def _bad(name: str, raw: str, accepted: Iterable[str]) -> ConfigError:
    import difflib

    accepted = tuple(accepted)
    close = difflib.get_close_matches(raw.strip().lower(), accepted, n=1)
    return ConfigError(
        f"{name}={raw!r} is not an accepted value; accepted (any case): {', '.join(accepted)}"
        + (f"; did you mean {close[0]}?" if close else ""),
        name, raw, accepted, close[0] if close else None,
    )
