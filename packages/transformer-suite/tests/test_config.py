"""The config classes: 1.8's fields, defaults, validation errors, views and lambda_func."""

import pytest

from sporeling.core import reset_auto_parallel_context, set_auto_parallel_context
from sporeling.transformer.modules import (
    EmbeddingOpParallelConfig,
    FeedForward,
    MoEConfig,
    MultiHeadAttention,
    OpParallelConfig,
    TransformerEncoder,
    TransformerOpParallelConfig,
    TransformerRecomputeConfig,
    VocabEmbedding,
    check_config,
)


def test_defaults_are_1_8s():
    assert OpParallelConfig().to_dict() == {"data_parallel": 1, "model_parallel": 1}
    assert EmbeddingOpParallelConfig().vocab_emb_dp is True
    assert TransformerRecomputeConfig().to_dict() == {
        "recompute": False,
        "parallel_optimizer_comm_recompute": False,
        "mp_comm_recompute": True,
        "recompute_slice_activation": False,
    }
    moe = MoEConfig()
    assert (
        moe.expert_num,
        moe.capacity_factor,
        moe.aux_loss_factor,
        moe.num_experts_chosen,
        moe.expert_group_size,
    ) == (1, 1.1, 0.05, 1, None)
    c = TransformerOpParallelConfig()
    assert (
        c.data_parallel,
        c.model_parallel,
        c.expert_parallel,
        c.pipeline_stage,
        c.micro_batch_num,
        c.optimizer_shard,
        c.gradient_aggregation_group,
        c.vocab_emb_dp,
    ) == (1, 1, 1, 1, 1, False, 4, True)
    assert c.recompute == TransformerRecomputeConfig()


def test_sub_views():
    c = TransformerOpParallelConfig(data_parallel=2, model_parallel=4, vocab_emb_dp=False)
    assert c.dp_mp_config == OpParallelConfig(2, 4)
    assert c.embedding_dp_mp_config == EmbeddingOpParallelConfig(2, 4, vocab_emb_dp=False)


@pytest.mark.parametrize(
    "make,msg",
    [
        (
            lambda: OpParallelConfig(data_parallel=0),
            "'data_parallel' must be a positive int, but got 0",
        ),
        (
            lambda: OpParallelConfig(model_parallel=1.5),
            "'model_parallel' must be a positive int, but got 1.5",
        ),
        (lambda: EmbeddingOpParallelConfig(vocab_emb_dp=1), "'vocab_emb_dp' must be a bool"),
        (
            lambda: TransformerOpParallelConfig(pipeline_stage=-1),
            "'pipeline_stage' must be a positive int",
        ),
        (
            lambda: TransformerOpParallelConfig(recompute="yes"),
            "'recompute' must be a TransformerRecomputeConfig",
        ),
        (
            lambda: MoEConfig(expert_num=2, num_experts_chosen=3),
            "'num_experts_chosen' should not be larger",
        ),
        (lambda: MoEConfig(capacity_factor=0), "'capacity_factor' must be a positive number"),
        (lambda: TransformerRecomputeConfig(recompute=1), "'recompute' must be a bool"),
    ],
)
def test_config_validation_errors(make, msg):
    with pytest.raises((ValueError, TypeError), match=msg.replace("(", r"\(")):
        make()


def test_bool_recompute_warns_and_converts():
    with pytest.warns(UserWarning, match="TransformerRecomputeConfig is recommended"):
        c = TransformerOpParallelConfig(recompute=True)
    assert c.recompute.recompute is True


@pytest.mark.parametrize(
    "make,msg",
    [
        (
            lambda: MultiHeadAttention(2, 4, 4, 6, 4),
            "'hidden_size' must be a multiple of 'num_heads'",
        ),
        (
            lambda: MultiHeadAttention(2, 4, 4, 8, 2, parallel_config=OpParallelConfig(1, 4)),
            "'num_heads' must be a multiple of 'parallel_config.model_parallel'",
        ),
        (
            lambda: MultiHeadAttention(3, 4, 4, 8, 2, parallel_config=OpParallelConfig(2, 1)),
            "'batch_size' must be a multiple of 'parallel_config.data_parallel'",
        ),
        (
            lambda: MultiHeadAttention(2, 4, 4, 8, 2, hidden_dropout_rate=1.0),
            r"must be in range \[0, 1.0\)",
        ),
        (
            lambda: FeedForward(8, 6, 0.1, parallel_config=OpParallelConfig(1, 4)),
            "'ffn_hidden_size' must be a multiple",
        ),
        (lambda: FeedForward(8, 8, 0.1, hidden_act="swishy"), "'hidden_act' must be one of"),
        (
            lambda: VocabEmbedding(10, 4, EmbeddingOpParallelConfig(1, 4, vocab_emb_dp=False)),
            "vocab size of the embedding 10 must be a multiple",
        ),
        (lambda: TransformerEncoder(2, 0, 8, 8, 4, 2), "'num_layers' must be a positive int"),
    ],
)
def test_layer_validation_errors(make, msg):
    with pytest.raises((ValueError, TypeError), match=msg):
        make()


def test_bad_input_shape_names_argument():
    import numpy as np

    from sporeling.core import Tensor

    m = MultiHeadAttention(2, 4, 4, 8, 2)
    x = Tensor(np.zeros((3, 4, 8), np.float32))
    with pytest.raises(ValueError, match="'query_tensor' must be one of .*but got \\[3, 4, 8\\]"):
        m(x, x, x, None)


def test_default_lambda_func_assigns_stages_fusion_groups_recompute():
    cfg = TransformerOpParallelConfig(
        pipeline_stage=2,
        micro_batch_num=2,
        gradient_aggregation_group=2,
        recompute=TransformerRecomputeConfig(recompute=True),
    )
    enc = TransformerEncoder(None, 5, 8, 8, 4, 2, parallel_config=cfg, offset=0)
    # stage = min(id // max(5 // 2, 1), 1); fusion = id // max(5 // 2, 1) + 1
    assert [b.pipeline_stage for b in enc.blocks] == [0, 0, 1, 1, 1]
    assert [b.fusion_group for b in enc.blocks] == [1, 1, 2, 2, 3]
    assert all(b.recompute_flags["recompute"] for b in enc.blocks)
    assert all(b.get_flags().get("recompute") for b in enc.blocks)  # marked via Cell.recompute
    seen = []
    TransformerEncoder(
        None,
        3,
        8,
        8,
        4,
        2,
        offset=4,
        lambda_func=lambda net, layer_id, layers, offset, parallel_config: seen.append(
            (layer_id, layers, offset)
        ),
    )
    assert seen == [(0, 3, 4), (1, 3, 4), (2, 3, 4)]


def test_check_config_only_in_semi_auto_mode():
    cfg = TransformerOpParallelConfig(
        data_parallel=2, model_parallel=2, pipeline_stage=2, micro_batch_num=1
    )
    check_config(cfg, device_num=1)  # stand-alone: nothing checked
    try:
        set_auto_parallel_context(parallel_mode="semi_auto_parallel")
        with pytest.raises(ValueError, match="should be less than device_num 4"):
            check_config(cfg, device_num=4)
        with pytest.raises(ValueError, match="micro_batch_num 1 should be greater than or equal"):
            check_config(cfg, device_num=8)
    finally:
        reset_auto_parallel_context()


def test_context_turns_fusion_on_in_graph_mode_and_gives_back_the_old_setting():
    from sporeling.core import PYNATIVE_MODE, get_context, set_context
    from sporeling.transformer.runner import _context

    set_context(mode=PYNATIVE_MODE, enable_graph_kernel=False)
    try:
        assert _context({"context": {"mode": "graph"}}) is False
        assert get_context("enable_graph_kernel") is True
        _context({"context": {"mode": "graph", "enable_graph_kernel": False}})
        assert get_context("enable_graph_kernel") is False
        _context({"context": {"mode": "pynative"}})
        assert get_context("enable_graph_kernel") is False
        with pytest.raises(ValueError, match="enable_graph_kernel.*'yes'"):
            _context({"context": {"mode": "graph", "enable_graph_kernel": "yes"}})
    finally:
        set_context(mode=PYNATIVE_MODE, enable_graph_kernel=False)


def test_graph_mode_with_pipeline_stages_runs_eagerly_and_says_so_once():
    import warnings

    from sporeling.core import GRAPH_MODE, PYNATIVE_MODE, get_context, set_context
    from sporeling.transformer.runner import _context

    try:
        with pytest.warns(UserWarning, match="pipeline_stage 2: the training step and evalu"):
            _context({"context": {"mode": "graph"}}, pipeline_stages=2)
        assert get_context("mode") == PYNATIVE_MODE
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _context({"context": {"mode": "graph"}}, pipeline_stages=1)
            assert get_context("mode") == GRAPH_MODE
            _context({"context": {"mode": "pynative"}}, pipeline_stages=2)
            assert get_context("mode") == PYNATIVE_MODE
    finally:
        set_context(mode=PYNATIVE_MODE, enable_graph_kernel=False)
