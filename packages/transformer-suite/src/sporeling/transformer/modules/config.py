"""The parallel and recompute configurations of MindSpore 1.8's ``nn.transformer``.

The fields, defaults and checks are 1.8's. A config describes a layout; the layers read
``data_parallel``/``model_parallel`` for their shape checks, :mod:`sporeling.transformer.plan`
turns a config into a per-rank estimate, and :mod:`sporeling.transformer.parallel` applies it
with the core's parallel machinery. The device checks (dp x mp x pp <= devices,
micro_batch_num >= pipeline_stage) apply in semi/auto parallel mode only, as in 1.8.
"""

from __future__ import annotations

import warnings
from typing import Any

from sporeling.core import get_auto_parallel_context

from ._checks import boolean, positive_int

__all__ = [
    "OpParallelConfig",
    "EmbeddingOpParallelConfig",
    "TransformerRecomputeConfig",
    "MoEConfig",
    "TransformerOpParallelConfig",
    "default_transformer_config",
    "default_embedding_parallel_config",
    "default_dpmp_config",
    "default_moe_config",
    "default_transformer_recompute_config",
    "default_lambda_func",
    "check_config",
]


class _Config:
    _fields: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for f in self._fields:
            v = getattr(self, f)
            out[f] = v.to_dict() if isinstance(v, _Config) else v
        return out

    def __repr__(self) -> str:
        body = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({body})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.to_dict() == other.to_dict()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]


class OpParallelConfig(_Config):
    """How an operator is split: ``data_parallel`` ways on the batch, ``model_parallel`` on
    its weights."""

    _fields = ("data_parallel", "model_parallel")

    def __init__(self, data_parallel: int = 1, model_parallel: int = 1) -> None:
        self.data_parallel = data_parallel
        self.model_parallel = model_parallel

    @property
    def data_parallel(self) -> int:
        return self._dp

    @data_parallel.setter
    def data_parallel(self, value: int) -> None:
        self._dp = positive_int(type(self).__name__, "data_parallel", value)

    @property
    def model_parallel(self) -> int:
        return self._mp

    @model_parallel.setter
    def model_parallel(self, value: int) -> None:
        self._mp = positive_int(type(self).__name__, "model_parallel", value)


class EmbeddingOpParallelConfig(OpParallelConfig):
    """``vocab_emb_dp=True``: the lookup is data parallel (``model_parallel`` ignored);
    False: the table's rows are split ``model_parallel`` ways."""

    _fields = ("data_parallel", "model_parallel", "vocab_emb_dp")

    def __init__(
        self, data_parallel: int = 1, model_parallel: int = 1, vocab_emb_dp: bool = True
    ) -> None:
        super().__init__(data_parallel, model_parallel)
        self.vocab_emb_dp = vocab_emb_dp

    @property
    def vocab_emb_dp(self) -> bool:
        return self._vocab_emb_dp

    @vocab_emb_dp.setter
    def vocab_emb_dp(self, value: bool) -> None:
        self._vocab_emb_dp = boolean("EmbeddingOpParallelConfig", "vocab_emb_dp", value)

    @property
    def dp_mp_config(self) -> OpParallelConfig:
        return OpParallelConfig(self.data_parallel, self.model_parallel)


class TransformerRecomputeConfig(_Config):
    """Which activations a block recomputes in backward instead of keeping."""

    _fields = (
        "recompute",
        "parallel_optimizer_comm_recompute",
        "mp_comm_recompute",
        "recompute_slice_activation",
    )

    def __init__(
        self,
        recompute: bool = False,
        parallel_optimizer_comm_recompute: bool = False,
        mp_comm_recompute: bool = True,
        recompute_slice_activation: bool = False,
    ) -> None:
        for name, value in zip(
            self._fields,
            (
                recompute,
                parallel_optimizer_comm_recompute,
                mp_comm_recompute,
                recompute_slice_activation,
            ),
        ):
            setattr(self, name, boolean("TransformerRecomputeConfig", name, value))


class MoEConfig(_Config):
    """Mixture of experts: ``expert_num`` experts, ``num_experts_chosen`` per token, each
    taking at most ``capacity_factor * tokens * chosen / expert_num`` tokens, and an
    auxiliary load-balancing loss scaled by ``aux_loss_factor``."""

    _fields = (
        "expert_num",
        "capacity_factor",
        "aux_loss_factor",
        "num_experts_chosen",
        "expert_group_size",
    )

    def __init__(
        self,
        expert_num: int = 1,
        capacity_factor: float = 1.1,
        aux_loss_factor: float = 0.05,
        num_experts_chosen: int = 1,
        expert_group_size: int | None = None,
    ) -> None:
        positive_int("MoEConfig", "expert_num", expert_num)
        if (
            isinstance(capacity_factor, bool)
            or not isinstance(capacity_factor, (int, float))
            or capacity_factor <= 0
        ):
            raise ValueError(
                "For 'MoEConfig', the argument 'capacity_factor' must be a positive number, but "
                f"got {capacity_factor!r}."
            )
        if (
            isinstance(aux_loss_factor, bool)
            or not isinstance(aux_loss_factor, (int, float))
            or not 0 <= aux_loss_factor < 1
        ):
            raise ValueError(
                "For 'MoEConfig', the argument 'aux_loss_factor' must be in range [0, 1.0), but "
                f"got {aux_loss_factor!r}."
            )
        positive_int("MoEConfig", "num_experts_chosen", num_experts_chosen)
        if num_experts_chosen > expert_num:
            raise ValueError(
                "For 'MoEConfig', 'num_experts_chosen' should not be larger than 'expert_num', "
                "but got "
                f"num_experts_chosen={num_experts_chosen} and expert_num={expert_num}."
            )
        if expert_group_size is not None:
            positive_int("MoEConfig", "expert_group_size", expert_group_size)
        self.expert_num = expert_num
        self.capacity_factor = float(capacity_factor)
        self.aux_loss_factor = float(aux_loss_factor)
        self.num_experts_chosen = num_experts_chosen
        self.expert_group_size = expert_group_size


class TransformerOpParallelConfig(_Config):
    """The whole layout of a transformer: data/model/expert parallel ways, pipeline stages
    and micro-batches, recompute, optimizer shard and gradient fusion groups.

    ``dp_mp_config`` and ``embedding_dp_mp_config`` are views for the layers;
    ``moe_parallel_config`` is the view MoE layers read.
    """

    _fields = (
        "data_parallel",
        "model_parallel",
        "expert_parallel",
        "pipeline_stage",
        "micro_batch_num",
        "recompute",
        "optimizer_shard",
        "gradient_aggregation_group",
        "vocab_emb_dp",
    )

    def __init__(
        self,
        data_parallel: int = 1,
        model_parallel: int = 1,
        expert_parallel: int = 1,
        pipeline_stage: int = 1,
        micro_batch_num: int = 1,
        recompute: TransformerRecomputeConfig | bool = TransformerRecomputeConfig(),  # noqa: B008  (1.8's default)
        optimizer_shard: bool = False,
        gradient_aggregation_group: int = 4,
        vocab_emb_dp: bool = True,
    ) -> None:
        name = "TransformerOpParallelConfig"
        self.data_parallel = positive_int(name, "data_parallel", data_parallel)
        self.model_parallel = positive_int(name, "model_parallel", model_parallel)
        self.expert_parallel = positive_int(name, "expert_parallel", expert_parallel)
        self.pipeline_stage = positive_int(name, "pipeline_stage", pipeline_stage)
        self.micro_batch_num = positive_int(name, "micro_batch_num", micro_batch_num)
        if isinstance(recompute, bool):
            warnings.warn(
                "TransformerRecomputeConfig is recommended as the recompute configuration type.",
                UserWarning,
                stacklevel=2,
            )
            recompute = TransformerRecomputeConfig(recompute=recompute)
        if not isinstance(recompute, TransformerRecomputeConfig):
            raise TypeError(
                f"For '{name}', the argument 'recompute' must be a TransformerRecomputeConfig or "
                "a bool, "
                f"but got {recompute!r}."
            )
        self.recompute = recompute
        self.optimizer_shard = boolean(name, "optimizer_shard", optimizer_shard)
        self.gradient_aggregation_group = positive_int(
            name, "gradient_aggregation_group", gradient_aggregation_group
        )
        self.vocab_emb_dp = boolean(name, "vocab_emb_dp", vocab_emb_dp)

    @property
    def dp_mp_config(self) -> OpParallelConfig:
        return OpParallelConfig(self.data_parallel, self.model_parallel)

    @property
    def embedding_dp_mp_config(self) -> EmbeddingOpParallelConfig:
        return EmbeddingOpParallelConfig(self.data_parallel, self.model_parallel, self.vocab_emb_dp)

    @property
    def moe_parallel_config(self) -> TransformerOpParallelConfig:
        return self

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TransformerOpParallelConfig:
        d = dict(d)
        rc = d.pop("recompute", None)
        if isinstance(rc, dict):
            d["recompute"] = TransformerRecomputeConfig(**rc)
        elif rc is not None:
            d["recompute"] = rc
        return cls(**d)


default_transformer_recompute_config = TransformerRecomputeConfig()
default_transformer_config = TransformerOpParallelConfig()
default_embedding_parallel_config = EmbeddingOpParallelConfig()
default_dpmp_config = OpParallelConfig()
default_moe_config = MoEConfig()


def default_lambda_func(
    network: Any,
    layer_id: int,
    offset: int,
    parallel_config: TransformerOpParallelConfig,
    layers: int,
) -> None:
    """1.8's per-block rule: the pipeline stage, the gradient fusion group and recompute.

    stage = min((layer_id + offset) // max(layers // pipeline_stage, 1), pipeline_stage - 1);
    fusion group = (layer_id + offset) // max(layers // gradient_aggregation_group, 1) + 1.
    """
    pp_dis = max(layers // parallel_config.pipeline_stage, 1)
    network.pipeline_stage = min((layer_id + offset) // pp_dis, parallel_config.pipeline_stage - 1)
    dis = max(layers // parallel_config.gradient_aggregation_group, 1)
    network.fusion_group = (layer_id + offset) // dis + 1
    rc = parallel_config.recompute
    network.recompute_flags = rc.to_dict() if rc.recompute else None
    if rc.recompute and callable(getattr(network, "recompute", None)):
        # the core's Cell.recompute: in PYNATIVE mode the block is replayed in backward
        network.recompute(
            parallel_optimizer_comm_recompute=rc.parallel_optimizer_comm_recompute,
            mp_comm_recompute=rc.mp_comm_recompute,
            recompute_slice_activation=rc.recompute_slice_activation,
        )


def check_config(
    config: TransformerOpParallelConfig | OpParallelConfig, device_num: int | None = None
) -> None:
    """1.8's ``_check_config``: in semi/auto parallel mode dp x mp (x pp) must fit the devices
    and ``micro_batch_num`` must be at least ``pipeline_stage``; nothing is checked otherwise."""
    mode = get_auto_parallel_context("parallel_mode")
    if mode not in ("semi_auto_parallel", "auto_parallel"):
        return
    if device_num is None:
        device_num = int(get_auto_parallel_context("device_num") or 1)
    pp = getattr(config, "pipeline_stage", 1)
    total = config.data_parallel * config.model_parallel * pp
    if total > device_num:
        raise ValueError(
            f"The product of the data parallel {config.data_parallel}, model parallel "
            f"{config.model_parallel} pipeline stages {pp} should be less than device_num "
            f"{device_num}."
        )
    mb = getattr(config, "micro_batch_num", 1)
    if mb < pp:
        raise ValueError(
            f"The micro_batch_num {mb} should be greater than or equal to the pipeline_stage {pp}."
        )
