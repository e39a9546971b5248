"""The embedded judge, ``offline:judge``: its word rules (figures, dates, names in a
role, quotes) and its entailment model (``entailment``: a small cross-encoder shipped in
``model/``, run with onnxruntime). Nothing here is used by the model judge."""
