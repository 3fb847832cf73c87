"""Text generation for GPT, the suite's T5 and Hugging Face T5: greedy, top-k, top-p and
temperature sampling over batched prompts of different lengths.

Prompts are left-aligned in a ``(batch, seq_length)`` window and padded. With ``use_past``
the model runs 1.8's two phases: one pass over the padded prompts (``batch_valid_length``
= the prompt lengths) fills the fixed-length caches, then one token per row and step. Without
it every step recomputes the whole window (the reference the cache is tested against).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sporeling.core import Tensor, no_grad

from .modules import add_flags_recursive

__all__ = ["sample_next", "generate", "generate_seq2seq", "generate_hf_t5"]


def sample_next(
    logits: np.ndarray,
    rng: np.random.Generator,
    do_sample: bool = False,
    top_k: int = 0,
    top_p: float = 1.0,
    temperature: float = 1.0,
) -> np.ndarray:
    """Next token per row of ``logits`` (batch, vocab): argmax, or a draw from the softmax
    of ``logits / temperature`` restricted to the ``top_k`` largest and to the smallest set
    whose probability reaches ``top_p``."""
    if not do_sample:
        return logits.argmax(-1)
    if temperature <= 0:
        raise ValueError(f"generate: 'temperature' must be > 0 when sampling, got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"generate: 'top_p' must be in (0, 1], got {top_p}")
    z = logits.astype(np.float64) / temperature
    if top_k and top_k < z.shape[-1]:
        kth = np.sort(z, -1)[:, -top_k][:, None]
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    if top_p < 1.0:
        order = np.argsort(-p, -1)
        sp = np.take_along_axis(p, order, -1)
        keep_sorted = np.cumsum(sp, -1) - sp < top_p  # the token that crosses top_p stays
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, -1)
        p = np.where(keep, p, 0.0)
        p /= p.sum(-1, keepdims=True)
    return np.array([rng.choice(p.shape[-1], p=row) for row in p])


def generate(
    model: Any,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    do_sample: bool = False,
    top_k: int = 0,
    top_p: float = 1.0,
    temperature: float = 1.0,
    eos_token_id: int | None = None,
    seed: int | None = None,
    step_logits: list[np.ndarray] | None = None,
    slide: bool = False,
    compiled: bool = True,
) -> list[list[int]]:
    """Continue each prompt by up to ``max_new_tokens`` tokens (fewer at ``eos_token_id``);
    returns the new tokens per prompt. When a row fills the ``seq_length`` window it stops,
    or with ``slide=True`` every row starts a new window from its last ``seq_length // 2``
    tokens (the fixed-length cache cannot shift; nanoGPT crops its context the same way).
    ``step_logits``, if given, receives each step's (batch, vocab) logits. With the cache,
    a GPT's one-token steps run as one graph compiled by ``jit`` (once per model and batch
    size; MoE and tensor-parallel GPTs step op by op); ``compiled=False`` runs them op by
    op (the same results)."""
    cfg = model.config
    S = cfg.seq_length
    lengths = np.array([len(p) for p in prompts], dtype=np.int32)
    if len(prompts) == 0 or lengths.min() < 1 or lengths.max() > S:
        raise ValueError(
            f"generate: every prompt needs 1..seq_length={S} tokens, got lengths {lengths.tolist()}"
        )
    rng = np.random.default_rng(seed)
    b = len(prompts)
    ids = np.zeros((b, S), np.int32)
    for i, p in enumerate(prompts):
        ids[i, : len(p)] = p
    valid = lengths.copy()
    out: list[list[int]] = [[] for _ in prompts]
    history = [list(p) for p in prompts]
    done = np.zeros(b, bool)
    was_training = model.training
    model.set_train(False)
    step = _DecodeStep(model) if cfg.use_past and compiled and _compilable(model) else None
    try:
        with no_grad():
            last = _window_logits(model, ids, valid, first=True)
            for _ in range(max_new_tokens):
                if step_logits is not None:
                    step_logits.append(last.copy())
                nxt = sample_next(last, rng, do_sample, top_k, top_p, temperature)
                for i in np.flatnonzero(~done):
                    out[i].append(int(nxt[i]))
                    history[i].append(int(nxt[i]))
                    if eos_token_id is not None and nxt[i] == eos_token_id:
                        done[i] = True
                if done.all() or len(max(out, key=len)) >= max_new_tokens:
                    break
                full = ~done & (valid >= S)  # the new token has no place in the window
                if full.any() and slide:
                    ids[:] = 0
                    for i, h in enumerate(history):
                        ctx = h[-(S // 2) :]
                        ids[i, : len(ctx)] = ctx
                        valid[i] = len(ctx)
                    last = _window_logits(model, ids, valid, first=True)
                    continue
                done |= full
                if done.all():
                    break
                nxt = np.where(done, 0, nxt).astype(np.int32)
                if cfg.use_past:
                    pos = np.minimum(valid, S - 1).astype(np.int32)
                    if step is None:
                        logits = model(
                            Tensor(nxt[:, None]), None, Tensor(pos[:, None]), False, Tensor(pos)
                        )
                    else:
                        logits = step(nxt[:, None], pos)
                    last = _logits_array(logits).reshape(b, -1)
                    valid = valid + (~done)
                else:
                    for i in np.flatnonzero(~done):
                        ids[i, valid[i]] = nxt[i]
                    valid = valid + (~done)
                    last = _window_logits(model, ids, valid, first=False)
    finally:
        if cfg.use_past:
            add_flags_recursive(model, is_first_iteration=True)
        model.set_train(was_training)
    return out


class _DecodeStep:
    """A GPT's one-token ``use_past`` step (backbone, tied head) as a ``jit`` graph. The
    caches are Parameters kept on the model, one set per cache shape: the prompt pass's
    caches are copied in, and each step adds the new key and value at their position in
    place (``scatter_nd_add``, an effect of the graph), so a step writes one position per
    cache instead of a new cache. The graph is kept on the model too, one per batch size;
    it re-reads the parameters on each call."""

    def __init__(self, model: Any) -> None:
        from sporeling.core import jit

        self.model = model
        self.blocks = list(model.backbone.transformer.encoder.blocks)
        fn = model.__dict__.get("_sporeling_decode_step")
        if fn is None:  # kept on the model (a cycle the collector frees with it)
            fn = model.__dict__["_sporeling_decode_step"] = jit(self._step)
        self.fn = fn

    def _step(self, tok: Tensor, pos: Tensor, bvl: Tensor) -> Any:
        m = self.model
        out = m.backbone(tok, None, pos, False, bvl)
        return m.head(out[0], out[2])

    def _cache_params(self) -> list[tuple[Any, Any]]:
        """The blocks' cache Parameters for the current caches' shape, holding their values
        (a graph captured them by identity: they are made once per shape, never replaced)."""
        from sporeling.core import Parameter, ops

        kept = self.model.__dict__.setdefault("_sporeling_decode_caches", {})
        first = self.blocks[0]
        key = (first.key_past.shape, first.value_past.shape, str(first.key_past.dtype))
        params = kept.get(key)
        if params is None:
            params = kept[key] = [
                tuple(
                    Parameter(
                        ops.zeros(t.shape, t.dtype), name=f"decode_{kind}_{i}", requires_grad=False
                    )
                    for kind, t in (("key", blk.key_past), ("value", blk.value_past))
                )
                for i, blk in enumerate(self.blocks)
            ]
        for blk, (pk, pv) in zip(self.blocks, params, strict=True):
            if blk.key_past is not pk:  # the prompt pass's cache: copy it in
                ops.assign(pk, blk.key_past)
                ops.assign(pv, blk.value_past)
                blk.set_past(pk, pv)
        return params

    def __call__(self, tok: np.ndarray, pos: np.ndarray) -> Tensor:
        self._cache_params()
        return self.fn(Tensor(tok.astype(np.int32)), Tensor(pos[:, None]), Tensor(pos))


def _logits_array(out: Any) -> np.ndarray:
    logits = out[0] if isinstance(out, tuple) else out
    return logits.asnumpy().astype(np.float64)


#: the cached prompt pass runs over the longest prompt rounded up to a multiple of this
PROMPT_BUCKET = 16


def _window_logits(model: Any, ids: np.ndarray, valid: np.ndarray, first: bool) -> np.ndarray:
    """Logits at each row's last valid position from a pass over the window: the whole
    window, or with the cache (a GPT without experts) only its first ``PROMPT_BUCKET``
    multiple that holds every prompt (the caches still span the window)."""
    b, S = ids.shape
    short = model.config.use_past and _last_rows_head(model)
    if short:
        S = min(S, -(-int(valid.max()) // PROMPT_BUCKET) * PROMPT_BUCKET)
        ids = ids[:, :S]
    mask = (np.arange(S)[None] < valid[:, None]).astype(np.float32)
    if model.config.use_past:
        add_flags_recursive(model, is_first_iteration=True)
        position = None
        if model.config.seq_length > S:
            position = Tensor(np.tile(np.arange(S, dtype=np.int32), (b, 1)))
        args: tuple[Any, ...] = (Tensor(mask), position, True, Tensor(valid.astype(np.int32)))
    else:
        args = (Tensor(mask),)
    rows = np.arange(b) * S + valid - 1  # each row's last valid position
    if _last_rows_head(model):
        # the tied head on those rows only, not on the whole window (b * S * vocab logits)
        out = model.backbone(Tensor(ids), *args)
        hidden = out[0].asnumpy().reshape(b * S, -1)[rows]
        logits = _logits_array(model.head(Tensor(hidden), out[2]))
    else:
        logits = _logits_array(model(Tensor(ids), *args)).reshape(b * S, -1)[rows]
    if model.config.use_past:
        add_flags_recursive(model, is_first_iteration=False)
    return logits


def _last_rows_head(model: Any) -> bool:
    """Whether ``model`` is a GPT whose head can run on chosen rows (not an MoE one: its
    outputs carry the auxiliary loss)."""
    from .models.gpt import GPT

    return isinstance(model, GPT) and not model.backbone.use_moe


def _compilable(model: Any) -> bool:
    """Whether a GPT's decode step runs as a ``jit`` graph: no experts and no tensor-parallel
    shards (their collectives stay op by op)."""
    if not _last_rows_head(model):
        return False
    return all(getattr(c, "mp_mode", None) is None for _, c in model.cells_and_names())


def generate_seq2seq(
    model: Any,
    sources: Sequence[Sequence[int]],
    max_new_tokens: int | None = None,
    do_sample: bool = False,
    top_k: int = 0,
    top_p: float = 1.0,
    temperature: float = 1.0,
    seed: int | None = None,
    step_logits: list[np.ndarray] | None = None,
) -> list[list[int]]:
    """Decode each source with a T5 model until ``eos_token_id`` or ``max_decode_length``;
    the encoder runs once, the decoder step by step (with its cache under ``use_past``)."""
    cfg = model.config
    S, T = cfg.seq_length, cfg.max_decode_length
    lengths = [len(s) for s in sources]
    if not sources or min(lengths) < 1 or max(lengths) > S:
        raise ValueError(
            f"generate_seq2seq: every source needs 1..seq_length={S} tokens, got {lengths}"
        )
    b = len(sources)
    src = np.full((b, S), cfg.pad_token_id, np.int32)
    for i, s in enumerate(sources):
        src[i, : len(s)] = s
    src_mask = (np.arange(S)[None] < np.array(lengths)[:, None]).astype(np.float32)
    steps = min(max_new_tokens or T, T)
    rng = np.random.default_rng(seed)
    dec = np.full((b, T), cfg.pad_token_id, np.int32)
    dec[:, 0] = cfg.decoder_start_token_id
    out: list[list[int]] = [[] for _ in sources]
    done = np.zeros(b, bool)
    was_training = model.training
    model.set_train(False)
    try:
        with no_grad():
            s_t, m_t = Tensor(src), Tensor(src_mask)
            enc = model.encode(s_t, m_t)
            ones = np.ones(b, np.int32)
            if cfg.use_past:
                add_flags_recursive(model, is_first_iteration=True)
            first = np.tile((np.arange(T) < 1).astype(np.float32), (b, 1))  # the start token
            logits = _logits_array(
                model(s_t, m_t, Tensor(dec), Tensor(first), None, True, Tensor(ones), enc)
            )
            last = logits.reshape(b, T, -1)[:, 0]
            if cfg.use_past:
                add_flags_recursive(model, is_first_iteration=False)
            for step in range(steps):
                if step_logits is not None:
                    step_logits.append(last.copy())
                nxt = sample_next(last, rng, do_sample, top_k, top_p, temperature)
                for i in np.flatnonzero(~done):
                    out[i].append(int(nxt[i]))
                    if nxt[i] == cfg.eos_token_id:
                        done[i] = True
                if done.all() or step + 1 >= steps or step + 1 >= T:
                    break
                pos = step + 1
                if cfg.use_past:
                    p = np.full((b, 1), pos, np.int32)
                    logits = model(
                        s_t,
                        m_t,
                        Tensor(nxt[:, None].astype(np.int32)),
                        None,
                        Tensor(p),
                        False,
                        Tensor(p[:, 0]),
                        enc,
                    )
                    last = _logits_array(logits).reshape(b, -1)
                else:
                    dec[:, pos] = nxt
                    tmask = (np.arange(T)[None] <= pos).astype(np.float32).repeat(b, 0)
                    logits = _logits_array(
                        model(s_t, m_t, Tensor(dec), Tensor(tmask), None, True, None, enc)
                    )
                    last = logits.reshape(b, T, -1)[:, pos]
    finally:
        if cfg.use_past:
            add_flags_recursive(model, is_first_iteration=True)
        model.set_train(was_training)
    return out


def generate_hf_t5(
    model: Any,
    input_ids: Any,
    max_new_tokens: int,
    attention_mask: Any = None,
    do_sample: bool = False,
    top_k: int = 0,
    top_p: float = 1.0,
    temperature: float = 1.0,
    seed: int | None = None,
    use_cache: bool = True,
    step_logits: list[np.ndarray] | None = None,
) -> np.ndarray:
    """Decode an ``HFT5ForConditionalGeneration`` from ``decoder_start_token_id``: greedy, or
    sampled as :func:`sample_next` does (top-k, top-p, temperature, seeded), with the
    key/value cache (``decode_step``) or the whole prefix rerun each step. Rows stop growing
    after ``eos_token_id``. Returns (batch, <= max_new_tokens) token ids, ``pad_token_id``
    after a row's end; ``step_logits``, if given, receives each step's (batch, vocab) logits."""
    c = model.config
    if not isinstance(input_ids, Tensor):
        input_ids = Tensor(np.asarray(input_ids, np.int32))
    if attention_mask is not None and not isinstance(attention_mask, Tensor):
        attention_mask = Tensor(np.asarray(attention_mask, np.float32))
    rng = np.random.default_rng(seed)
    was_training = model.training
    model.set_train(False)
    try:
        with no_grad():
            memory = model.encode(input_ids, attention_mask)
            b = input_ids.shape[0]
            out = np.full((b, 1), c.decoder_start_token_id, np.int32)
            done = np.zeros(b, bool)
            cache = model.start_cache(memory) if use_cache else None
            for _ in range(max_new_tokens):
                if cache is not None:
                    step = model.decode_step(Tensor(out[:, -1:]), cache, attention_mask)
                    last = step.asnumpy()[:, -1].astype(np.float64)
                else:
                    logits = model.decode(Tensor(out), memory, attention_mask)
                    last = logits.asnumpy()[:, -1].astype(np.float64)
                if step_logits is not None:
                    step_logits.append(last.copy())
                nxt = sample_next(last, rng, do_sample, top_k, top_p, temperature)
                nxt = np.where(done, c.pad_token_id, nxt).astype(np.int32)
                out = np.concatenate([out, nxt[:, None]], 1)
                done |= nxt == c.eos_token_id
                if done.all():
                    break
    finally:
        model.set_train(was_training)
    return out[:, 1:]
