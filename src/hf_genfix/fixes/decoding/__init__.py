"""The decoding family (what it covers: ``hf_genfix.fixes.FAMILIES``): its fix modules.

Its manifests are in patches/decoding/, its tests in tests/decoding/.
"""
