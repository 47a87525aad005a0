"""model-fsmt-static-cache: FSMT with ``cache_implementation="static"`` attends to the static cache's unfilled zero
slots from the first generated token on (silently wrong).

The defect. ``FSMTModel.forward`` builds the decoder's causal and padding masks only when ``use_cache`` is off (``if
not use_cache``); with a cache it passes none, which a dynamic cache can afford for one new token a step. A static
cache holds ``max_cache_len`` slots from the first step, the unwritten ones zeros, and with no mask the new token
weights them all (a logit difference of about 0.005 on a tiny model from step 0). Measured wrong on 5.18.0 and
5.24.0 and fixed there. 5.0.0-5.17.0 are wrong as well, but not by the mask alone: the decoder there derives
positions from the fed ids rather than the cache length (suspected, not traced), and masking alone moves the logits
further (0.116): the patch is not installed there (left open).

Detection. ``doctor --sweep``'s s2s-static-cache scenario on a tiny FSMT: a padded encoder batch, 5 greedy tokens
with a static cache, every row and step against a no-cache forward of that row alone.

Correction. FSMT's ``DecoderLayer.forward`` is wrapped: when upstream passes no ``causal_mask`` and the layer's
self-attention cache is a static one, it passes the additive mask that hides the slots past the tokens written so
far (``fixes._static_self_attention``): exactly the keys the dynamic cache would hold. A mask upstream builds, a
dynamic cache or no cache go to upstream untouched. Where the release's static layer does not say where it writes
(FSMT hands it no ``cache_position``), it raises a clear error before the first token instead of a guess.
"""

from __future__ import annotations

from hf_genfix.fixes import _static_self_attention as static

PATCH = "model-fsmt-static-cache"
TARGET = "transformers.models.fsmt.modeling_fsmt:DecoderLayer.forward"

install = static.installer(PATCH, "fsmt", TARGET, "causal_mask", batch_first=False)
probe = static.prober("fsmt")
