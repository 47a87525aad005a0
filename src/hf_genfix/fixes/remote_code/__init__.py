"""The remote-code family (what it covers: ``hf_genfix.fixes.FAMILIES``): its fix modules.

Its manifests are in patches/remote_code/, its tests in tests/remote_code/.
"""
