"""``sporeling-transformer plan``: the per-rank memory and communication estimate of a run
config's layout, from the core's cost model (:mod:`sporeling.core.parallel.cost_model`),
before anything runs (with the recompute config's smaller activations and extra forward);
plus the per-layer pipeline stage and gradient-fusion group that 1.8's ``lambda_func`` gives
each block."""

from __future__ import annotations

from typing import Any

from sporeling.core.parallel import cost_model

from .modules import TransformerOpParallelConfig, TransformerRecomputeConfig
from .modules.config import default_lambda_func

__all__ = ["plan", "plan_text", "stage_parameter_bytes"]

_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


class _Block:
    pass


def stage_parameter_bytes(
    m: dict[str, Any], pc: TransformerOpParallelConfig, vocab: int, stages: list[int]
) -> list[int] | None:
    """The parameter bytes one rank of each pipeline stage holds (the runner frees the other
    stages'): its blocks (``stages[i]``: block i's stage) with their heads and feed-forward
    units split over ``model_parallel`` (layer norms and the row layers' biases whole), the
    embeddings on stage 0, the final layer norm on the last. None for an MoE GPT."""
    if int((m.get("moe_config") or {}).get("expert_num", 1)) > 1:
        return None
    h, mp = int(m["embedding_size"]), pc.model_parallel
    f = h * int(m.get("expand_ratio", 4))
    pb = _BYTES[m.get("param_init_type", "float32")]
    lb = _BYTES[m.get("layernorm_dtype", "float32")]
    attention = (4 * h * h + 3 * h) // mp + h  # q, k, v columns; the projection's rows
    feed_forward = (2 * h * f + f) // mp + h
    block = 4 * h * lb + (attention + feed_forward) * pb
    n = pc.pipeline_stage
    out = [sum(block for s in stages if s == k) for k in range(n)]
    out[0] += (vocab + int(m["seq_length"])) * h * pb
    out[n - 1] += 2 * h * lb
    return out


def plan(
    cfg: dict[str, Any],
    bandwidth: float = 5e9,
    latency: float = 5e-6,
    device_flops: float | None = None,
    efficiency: float = 0.4,
) -> dict[str, Any]:
    """Estimate for the config's (dp, mp, optimizer_shard) and its layer placement."""
    m = cfg.get("model", {})
    pc = TransformerOpParallelConfig.from_dict(cfg.get("parallel_config", {}) or {})
    if cfg.get("recompute_config"):  # as runner.build_gpt applies it
        pc.recompute = TransformerRecomputeConfig(**cfg["recompute_config"])
    # vocab_size 0 means "the tokenizer's": unknown before the data is read, so the plan
    # counts the 65 characters of Tiny Shakespeare and says so
    vocab = int(m.get("vocab_size") or 65)
    model = cost_model.GPTConfig(
        hidden=int(m["embedding_size"]),
        layers=int(m["num_layers"]),
        heads=int(m["num_heads"]),
        seq=int(m["seq_length"]),
        vocab=vocab,
    )
    layout = cost_model.Layout(pc.data_parallel, pc.model_parallel, pc.optimizer_shard)
    batch = int(cfg.get("train", {}).get("batch_size", pc.data_parallel))
    if device_flops is None:
        from .runner import measure_peak_flops

        device_flops = measure_peak_flops(512, 3)
    wbytes = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}[
        m.get("compute_dtype", "float32")
    ]
    est = cost_model.estimate(
        model,
        layout,
        cost_model.LinkModel(bandwidth, latency),
        batch,
        device_flops=device_flops,
        efficiency=efficiency,
        weight_bytes=wbytes,
        recompute=pc.recompute.recompute,
    )
    layers = []
    for i in range(model.layers):
        blk = _Block()
        default_lambda_func(blk, layer_id=i, offset=0, parallel_config=pc, layers=model.layers)
        layers.append(
            {
                "layer": i,
                "pipeline_stage": blk.pipeline_stage,
                "fusion_group": blk.fusion_group,  # type: ignore[attr-defined]
                "recompute": blk.recompute_flags is not None,
            }
        )  # type: ignore[attr-defined]
    stage_bytes = stage_parameter_bytes(
        {**m, "moe_config": cfg.get("moe_config")}, pc, vocab, [r["pipeline_stage"] for r in layers]
    )
    return {
        "vocab_assumed": not m.get("vocab_size"),
        "stage_parameter_bytes": stage_bytes,
        "estimate": est,
        "link": cost_model.LinkModel(bandwidth, latency),
        "layers": layers,
        "parameters": model.params(),
        "parallel_config": pc,
        "device_flops": device_flops,
    }


def plan_text(result: dict[str, Any]) -> str:
    pc = result["parallel_config"]
    est = result["estimate"]
    lines = [
        f"parameters: {result['parameters']:,}; layout dp={pc.data_parallel} "
        f"mp={pc.model_parallel} "
        f"pipeline_stage={pc.pipeline_stage} micro_batch_num={pc.micro_batch_num} "
        f"optimizer_shard={pc.optimizer_shard} (device FLOP/s {result['device_flops'] / 1e9:.1f} "
        "G)",
        cost_model.plan_table([est], result["link"]),
        "per-rank communication per step: tensor parallel "
        f"{est.tp_comm_time * 1e3:.3f} ms, data parallel {est.dp_comm_time * 1e3:.3f} ms",
        *(
            [
                "parameter bytes per rank (its stage's, its model-parallel shards): "
                + ", ".join(
                    f"stage {k} {b:,}" for k, b in enumerate(result["stage_parameter_bytes"])
                )
            ]
            if result.get("stage_parameter_bytes")
            else []
        ),
        "layer  stage  fusion-group  recompute",
    ]
    for r in result["layers"]:
        lines.append(
            f"{r['layer']:>5}  {r['pipeline_stage']:>5}  {r['fusion_group']:>12}  {r['recompute']}"
        )
    if pc.recompute.recompute:
        lines.append(
            "note: every block recomputed (PYNATIVE and GRAPH_MODE alike): activations are "
            "each block's input plus one block's full set; compute includes one more forward "
            "of each block"
        )
    if result.get("vocab_assumed"):
        lines.append(
            "note: model.vocab_size is 0 (the tokenizer's); 65 assumed (give model.vocab_size=N)"
        )
    if pc.pipeline_stage > 1:
        lines.append(
            "note: the cost model does not model pipeline stages (its memory is for one stage "
            "holding every layer; the parameter bytes above are each stage's)"
        )
    return "\n".join(lines)
