"""The remote-code family (what it covers: ``hf_genfix.fixes.FAMILIES``): its fix modules.

Its manifests are in patches/remote_code/, its tests in tests/remote_code/.
"""

__all__ = ["removed_api"]


def __getattr__(name: str) -> object:
    # The family's face for the testing helpers (which old API a remote class uses), loaded on first use only:
    # importing one fix module of the family must not bring in the others' helpers.
    if name == "removed_api":
        from ._remote_code import removed_api

        return removed_api
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
