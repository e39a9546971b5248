"""The validator: prompt templates, prompt building, strict structured output,
chunked judging over long evidence and the offline grounding judge (V, O)."""
