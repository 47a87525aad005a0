"""model-mamba-continuation: Mamba forgets its cached SSM state when several tokens follow a cache, and generate()
feeds a continued conversation on top of the state that already holds its start (5.x caches of recurrent states).

The defect. On 5.5.0-5.24.0 (Mamba's states in 5.x's generic cache; 5.13-5.16 put the mixer's forward behind
accelerate's ``force_accelerate_hooks``, whose ``(*args, **kwargs)`` the patcher sees through; earlier releases are
wrong too but run other code, see the manifest and ``model-mamba-state-chunk``'s refusal), two things go wrong in
the plainest continuations: (1) ``MambaMixer.forward`` starts the selective scan from a zero state whenever more
than one token comes, even after a cache that holds one (its one-token path reads the state; its "prompt" path does
not); (2) generate() slices the ids by the cache's length, and a cache of recurrent states has none, so
``generate(out.sequences + next turn, past_key_values=out.past_key_values)`` and the documented prefix-cache reuse
(``generate(prefix + continuation, past_key_values=copy.deepcopy(cache))``) feed the whole conversation again on
top of the state. Both are silent: on the hunt's tiny Mamba (weights of std 0.3, state 8, conv 4) a second turn is
off by 0.567, a reused prefix cache by 0.416, new tokens alone after a cache by 1.51 (max |logit diff| against a
no-cache forward of the conversation, 5.24.0).

Detection. ``probe()``: a tiny Mamba, ``generate()`` a first turn, then a second turn with three more tokens
continuing from the returned cache; every step of the second turn against a no-cache forward of the conversation.

Correction. ``fixes.models._ssm_continuation``: the mixer takes a chunk after a state one token at a time (upstream's
decoding path); the backbone counts, on the cache object, the columns fed into it; the model's
``prepare_inputs_for_generation`` slices a first iteration's ids past that count, as generate() does for an attention
cache. Everything else is upstream's (a prompt, single tokens, an unknown count, a padded chunk after a state).
"""

from __future__ import annotations

from typing import Any

from hf_genfix._patches.models.shared.ssm_continuation import install_continuation

MODULE = "transformers.models.mamba.modeling_mamba"
MIXER = f"{MODULE}:MambaMixer.forward"
BACKBONE = f"{MODULE}:MambaModel.forward"
PREPARE = f"{MODULE}:MambaForCausalLM.prepare_inputs_for_generation"


def install(patcher: Any) -> None:
    install_continuation(patcher, MIXER, BACKBONE, PREPARE)
