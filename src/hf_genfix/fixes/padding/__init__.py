"""The padding family (what it covers: ``hf_genfix.fixes.FAMILIES``): its fix modules.

Its manifests are in patches/padding/, its tests in tests/padding/.
"""
