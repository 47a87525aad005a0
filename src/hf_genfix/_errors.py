"""The exceptions and warning users catch; importable without loading the registry."""


class HFGenfixWarning(UserWarning):
    """A patch was skipped (drift, or its fix failed to install); the program goes on without it."""


class PatchError(RuntimeError):
    """HF_GENFIX_STRICT=1: a patch that would have been skipped with a warning raises instead."""


class Drift(Exception):
    """The installed transformers lacks what a fix needs (a target or a parameter)."""


class ManifestError(ValueError):
    """A manifest in patches/ that does not follow docs/writing-a-patch.md."""
