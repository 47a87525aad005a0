"""model-llama4-moe-router-scores: on 4.54.0-4.56.0 Llama-4's mixture of experts scales each token's input to each
expert by another token's router score, so every forward of more than one token is silently wrong (a prompt's
prefill, its cache, and every generate() that follows; 4.56.1 fixed it).

The defect. ``Llama4TextMoe.forward`` feeds every expert every token, scaled by that token's router score for that
expert (top-1: the chosen expert's sigmoid score, 0 elsewhere). The inputs are laid out expert by expert
(``hidden_states.repeat(num_experts, 1)``: all tokens for expert 0, then all for expert 1, ...). 4.54.0 moved the
routing into ``Llama4Router``, which returns the scores token by token (``[tokens, experts]``) where the old code
had transposed them, and kept ``router_scores.reshape(-1, 1)``: the scores are read in token order against inputs
in expert order. With one token the two orders agree, so decoding steps are right; with several, token t's input
to expert e is scaled by the score at another (token, expert) pair, mostly another token's 0. Upstream called it
"Llama4 generate[s] garbage output" (PR 40609, in 4.56.1: the transpose put back).

Detection (``probe``). The sweep's ``causal-prefix`` scenario on its tiny Llama-4 text model: the logits of a
prompt's first tokens cannot depend on the tokens after them, by definition; on 4.54.0-4.56.0 they do (2.54 on the
loud model), because each token's expert inputs are scaled by later tokens' scores. The sweep had left the model
out on those releases as "not causal: an encoder used as a decoder" until its causality check asked the config's
own switch.

Correction. ``Llama4TextMoe.forward`` is wrapped. One token is upstream's call (its two orders agree). For several,
the layer's own modules do the work in upstream's order: the router's scores, transposed to the experts' order,
scale the repeated inputs, the experts run on them, and their sum over experts is added to the shared expert's
output; the router's logits are returned as upstream returns them. A router that does not return
``(scores [tokens, experts], logits)`` is upstream's call.
"""

from __future__ import annotations

from typing import Any

from hf_genfix.toolkit import bound_arguments, recorder

TARGET = "transformers.models.llama4.modeling_llama4:Llama4TextMoe.forward"

record = recorder(__name__)


def install(patcher: Any) -> None:
    patcher.require(TARGET, "hidden_states")
    patcher.wrap(TARGET, _forward)


def _forward(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    hidden = bound_arguments(wrapped, args, kwargs).get("hidden_states")
    flat = hidden.reshape(-1, instance.hidden_dim)
    if flat.shape[0] == 1:
        return wrapped(*args, **kwargs)  # one token: token order and expert order agree, upstream is right
    routed = instance.router(flat)
    known = isinstance(routed, tuple) and len(routed) == 2
    if not known or routed[0].shape != (flat.shape[0], instance.num_experts):
        return wrapped(*args, **kwargs)  # not the router this fix knows: upstream's
    scores, logits = routed
    experts = scores.shape[1]
    # The inputs are expert-major (every token for expert 0, then expert 1, ...): so must the scores be.
    routed_in = flat.repeat(experts, 1) * scores.transpose(0, 1).reshape(-1, 1)
    routed_out = instance.experts(routed_in)
    out = instance.shared_expert(flat)
    out.add_(routed_out.reshape(experts, -1, routed_out.shape[-1]).sum(dim=0))
    if record.on:
        record.changed("%d tokens' expert inputs scaled by their own router scores", flat.shape[0])
    return out, logits
