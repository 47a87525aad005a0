"""The models family (what it covers: ``hf_genfix.fixes.FAMILIES``): its fix modules.

Its manifests are in patches/models/, its tests in tests/models/.
"""
