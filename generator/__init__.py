"""Tunesmith: generates optimization algorithms for GPU auto-tuning."""

import os

# litellm fetches its model cost map from the network at import unless told otherwise; there is
# no network here and users must not depend on one, so use the map bundled with the package.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__version__ = "0.1.0"
