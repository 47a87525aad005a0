"""The prepare-inputs family (what it covers: ``hf_genfix.fixes.FAMILIES``): its fix modules.

Its manifests are in patches/prepare_inputs/, its tests in tests/prepare_inputs/.
"""
