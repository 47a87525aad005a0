"""The sliding-window family (what it covers: ``hf_genfix.fixes.FAMILIES``): its fix modules.

Its manifests are in patches/sliding_window/, its tests in tests/sliding_window/.
"""
