"""The embedded judge's entailment model: does a premise entail, leave open or contradict
a hypothesis? A MiniLM cross-encoder fine-tuned on public NLI data (``model/MODEL_CARD.md``
says which, and how to rebuild it), exported to int8 ONNX and run on the CPU with
onnxruntime; the tokenizer is the encoder's own (``tokenizers``).

The model is loaded once per process, on first use (``shared_model``), and each pair is
scored on its own (the same pair always gets the same probabilities). A process that
never judges never loads it.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from tokenizers import Tokenizer

__all__ = ["MODEL_DIR", "Entailment", "EntailmentModel", "shared_model"]

MODEL_DIR = Path(__file__).resolve().parent / "model"
MODEL_FILE = "entailment.onnx"
TOKENIZER_FILE = "tokenizer.json"
# The model was trained on pairs of at most this many tokens (premise cut first).
MAX_TOKENS = 128
# Scores kept per process: a claim judged again (a replay, the second judge, judge_bench)
# costs no inference.
CACHE_PAIRS = 20_000


@dataclass(frozen=True)
class Entailment:
    """The model's probabilities for one premise and hypothesis."""

    contradiction: float
    neutral: float
    entailment: float


class EntailmentModel:
    """One ONNX session and its tokenizer; ``score`` is thread-safe."""

    def __init__(self, folder: Path, *, threads: int = 1) -> None:
        model, vocabulary = folder / MODEL_FILE, folder / TOKENIZER_FILE
        for path in (model, vocabulary):
            if not path.is_file():
                raise ImproperlyConfigured(f"The judge's entailment model lacks {path}.")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = Tokenizer.from_file(str(vocabulary))
        self.tokenizer.enable_truncation(MAX_TOKENS, strategy="longest_first")
        self.tokenizer.no_padding()
        self._cache: OrderedDict[tuple[str, str], Entailment] = OrderedDict()
        self._lock = threading.Lock()

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[Entailment]:
        """The probabilities for each (premise, hypothesis) pair, in order."""
        with self._lock:
            todo = sorted({p for p in pairs if p not in self._cache})
            if todo:
                for pair, result in zip(todo, self._infer(todo), strict=True):
                    self._cache[pair] = result
                while len(self._cache) > CACHE_PAIRS:
                    self._cache.popitem(last=False)
            return [self._cache[p] for p in pairs]

    def _infer(self, pairs: list[tuple[str, str]]) -> list[Entailment]:
        # One pair a run: the int8 model quantises activations by the range of the whole
        # input, so a pair scored beside others (padding, longer rows) would score
        # differently; alone, a pair always scores the same. It costs no more CPU a pair.
        out = []
        for e in self.tokenizer.encode_batch(pairs):
            ids = np.array([e.ids], dtype=np.int64)
            feed = {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.array([e.type_ids], dtype=np.int64),
            }
            logits = self.session.run(["logits"], feed)[0][0]
            shifted = np.exp(logits - logits.max())
            c, n, entail = (float(x) for x in shifted / shifted.sum())
            out.append(Entailment(c, n, entail))
        return out


def model_checksum(folder: Path = MODEL_DIR) -> str:
    """The SHA-256 of the shipped model file (its card states it)."""
    return hashlib.sha256((folder / MODEL_FILE).read_bytes()).hexdigest()


@functools.cache
def shared_model() -> EntailmentModel:
    """The process's model, loaded on first use from ``OFFLINE_JUDGE_MODEL_DIR``."""
    return EntailmentModel(Path(settings.OFFLINE_JUDGE_MODEL_DIR))
