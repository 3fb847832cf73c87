"""ModelCheckpoint and CheckpointConfig: MindSpore 1.8's naming, triggers, rotation and options."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, nn
from sporeling.core.train import (
    CheckpointConfig,
    ModelCheckpoint,
    load_checkpoint,
    load_checkpoint_metadata,
)
from sporeling.core.train.callback import Callback, RunContext
from sporeling.core.train.callback import checkpoint as ckpt_mod


class Net(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.w = Parameter(Tensor(np.zeros((2, 2), np.float32)), name="w")

    def construct(self, x):
        return x


class Params(dict):
    """A cb_params bag (a dict whose keys are attributes), as Model passes to callbacks."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        self[key] = value


def _run(cb: ModelCheckpoint, net: nn.Cell, epochs: int, batch_num: int, stop_after=None):
    """Drive the hooks as Model.train does; the weights hold the global step for checking."""
    params = Params(train_network=net, batch_num=batch_num, epoch_num=epochs, cur_step_num=0)
    ctx = RunContext(params)
    cb.on_train_begin(ctx)
    done = False
    for epoch in range(1, epochs + 1):
        params.cur_epoch_num = epoch
        for _ in range(batch_num):
            params.cur_step_num += 1
            net.w.set_data(Tensor(np.full((2, 2), params.cur_step_num, np.float32)))
            cb.on_train_step_end(ctx)
            if stop_after is not None and params.cur_step_num >= stop_after:
                done = True
                break
        if done:
            break
    cb.on_train_end(ctx)
    return params


def _ckpts(directory):
    return sorted(f for f in os.listdir(directory) if f.endswith(".ckpt"))


def test_is_a_callback_and_defaults(tmp_path):
    cb = ModelCheckpoint(directory=str(tmp_path))
    assert isinstance(cb, Callback)
    assert cb.latest_ckpt_file_name == ""
    config = CheckpointConfig()
    assert config.get_checkpoint_policy() == {
        "save_checkpoint_steps": 1,
        "save_checkpoint_seconds": None,
        "keep_checkpoint_max": 5,
        "keep_checkpoint_per_n_minutes": None,
        "saved_network": None,
    }
    assert config.integrated_save and not config.async_save and not config.exception_save
    assert config.enc_key is None and config.enc_mode == "AES-GCM"
    assert config.append_dict is None


def test_every_step_keeps_max_newest_and_names_like_mindspore(tmp_path):
    cfg = CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=3)
    cb = ModelCheckpoint(prefix="net", directory=str(tmp_path), config=cfg)
    _run(cb, Net(), epochs=2, batch_num=4)
    assert _ckpts(tmp_path) == ["net-2_2.ckpt", "net-2_3.ckpt", "net-2_4.ckpt"]
    assert cb.latest_ckpt_file_name == os.path.join(str(tmp_path), "net-2_4.ckpt")
    loaded = load_checkpoint(cb.latest_ckpt_file_name)
    assert loaded["w"].asnumpy().tolist() == [[8.0, 8.0], [8.0, 8.0]]
    meta = load_checkpoint_metadata(cb.latest_ckpt_file_name)
    assert (meta["epoch"], meta["step"]) == (2, 8)  # epoch and global step
    assert "rng_state" in meta and meta["rng_state"]["cpu"]["bit_generator"] == "PCG64"
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert not os.path.exists(tmp_path / "net-graph.meta")  # no graph file (documented)


def test_save_every_n_steps_and_last_step_at_end(tmp_path):
    cfg = CheckpointConfig(save_checkpoint_steps=3, keep_checkpoint_max=10)
    cb = ModelCheckpoint(directory=str(tmp_path), config=cfg)
    _run(cb, Net(), epochs=3, batch_num=4, stop_after=10)
    # global steps 3, 6, 9 and the forced save of step 10 at the end of training
    assert _ckpts(tmp_path) == ["CKP-1_3.ckpt", "CKP-2_2.ckpt", "CKP-3_1.ckpt", "CKP-3_2.ckpt"]
    assert cb.latest_ckpt_file_name.endswith("CKP-3_2.ckpt")
    assert load_checkpoint_metadata(cb.latest_ckpt_file_name)["step"] == 10


def test_end_does_not_save_the_same_step_twice(tmp_path):
    cb = ModelCheckpoint(directory=str(tmp_path), config=CheckpointConfig(keep_checkpoint_max=10))
    _run(cb, Net(), epochs=1, batch_num=2)
    assert _ckpts(tmp_path) == ["CKP-1_1.ckpt", "CKP-1_2.ckpt"]


def test_prefix_collision_gets_a_suffix(tmp_path):
    cfg = CheckpointConfig(keep_checkpoint_max=1)
    first = ModelCheckpoint(directory=str(tmp_path), config=cfg)
    _run(first, Net(), epochs=1, batch_num=2)
    second = ModelCheckpoint(directory=str(tmp_path), config=cfg)
    assert second.prefix == "CKP_1"
    _run(second, Net(), epochs=1, batch_num=3)
    third = ModelCheckpoint(directory=str(tmp_path), config=cfg)
    assert third.prefix == "CKP_2"
    # each run rotates only its own files
    assert _ckpts(tmp_path) == ["CKP-1_2.ckpt", "CKP_1-1_3.ckpt"]
    other = ModelCheckpoint(prefix="CKPT", directory=str(tmp_path), config=cfg)
    assert other.prefix == "CKPT"  # a longer name is another prefix (MindSpore's isalpha rule)


def test_rotation_orders_by_time_then_step(tmp_path):
    cfg = CheckpointConfig(keep_checkpoint_max=2)
    cb = ModelCheckpoint(directory=str(tmp_path), config=cfg)
    net = Net()
    params = Params(train_network=net, batch_num=100, cur_epoch_num=1, cur_step_num=0)
    ctx = RunContext(params)
    for step in (1, 2, 3):
        params.cur_step_num = step
        cb.on_train_step_end(ctx)
        os.utime(cb.latest_ckpt_file_name, ns=(10**9, 10**9))  # identical mtimes
    assert _ckpts(tmp_path) == ["CKP-1_2.ckpt", "CKP-1_3.ckpt"]


def test_save_by_seconds(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(ckpt_mod.time, "time", lambda: clock[0])
    cfg = CheckpointConfig(save_checkpoint_steps=0, save_checkpoint_seconds=10)
    assert cfg.save_checkpoint_steps == 0 and cfg.save_checkpoint_seconds == 10
    cb = ModelCheckpoint(directory=str(tmp_path), config=cfg)
    params = Params(train_network=Net(), batch_num=100, cur_epoch_num=1, cur_step_num=0)
    ctx = RunContext(params)
    for step, t in [(1, 1005.0), (2, 1011.0), (3, 1015.0), (4, 1022.0), (5, 1023.0)]:
        params.cur_step_num = step
        clock[0] = t
        cb.on_train_step_end(ctx)
    cb.on_train_end(ctx)
    assert _ckpts(tmp_path) == ["CKP-1_2.ckpt", "CKP-1_4.ckpt", "CKP-1_5.ckpt"]


def test_keep_one_per_n_minutes(tmp_path, monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(ckpt_mod.time, "time", lambda: clock[0])
    cfg = CheckpointConfig(keep_checkpoint_max=0, keep_checkpoint_per_n_minutes=1)
    assert cfg.keep_checkpoint_max == 0 and cfg.keep_checkpoint_per_n_minutes == 1
    cb = ModelCheckpoint(directory=str(tmp_path), config=cfg)
    params = Params(train_network=Net(), batch_num=100, cur_epoch_num=1, cur_step_num=0)
    ctx = RunContext(params)
    monkeypatch.setattr(ckpt_mod.os.path, "getmtime", lambda f: times[os.path.basename(f)])
    times = {}
    for step, t in [(1, 0.0), (2, 10.0), (3, 20.0), (4, 100.0)]:
        params.cur_step_num = step
        clock[0] = t
        cb.on_train_step_end(ctx)
        times[os.path.basename(cb.latest_ckpt_file_name)] = t
    # at t=20 the files of the last minute (t=0, t=10) collapse to the oldest; t=100 keeps all
    assert _ckpts(tmp_path) == ["CKP-1_1.ckpt", "CKP-1_3.ckpt", "CKP-1_4.ckpt"]


def test_keep_max_defaults_to_one_when_both_are_zero():
    cfg = CheckpointConfig(keep_checkpoint_max=0, keep_checkpoint_per_n_minutes=0)
    assert cfg.keep_checkpoint_max == 1
    cfg = CheckpointConfig(keep_checkpoint_max=2, keep_checkpoint_per_n_minutes=3)
    assert cfg.keep_checkpoint_per_n_minutes is None


def test_append_info_and_saved_network(tmp_path):
    saved = Net()
    saved.w.set_data(Tensor(np.full((2, 2), -1.0, np.float32)))
    cfg = CheckpointConfig(
        saved_network=saved,
        append_info=["epoch_num", "step_num", {"lr": 0.5, "tag": "run-1", "t": Tensor([1, 2])}],
    )
    cb = ModelCheckpoint(directory=str(tmp_path), config=cfg)
    _run(cb, Net(), epochs=2, batch_num=2)
    loaded = load_checkpoint(cb.latest_ckpt_file_name)
    assert loaded["w"].asnumpy().tolist() == [[-1.0, -1.0], [-1.0, -1.0]]  # saved_network
    assert int(loaded["epoch_num"]) == 2 and int(loaded["step_num"]) == 4
    assert float(loaded["lr"]) == 0.5 and loaded["tag"] == "run-1"
    assert loaded["t"].asnumpy().tolist() == [1, 2]


def test_async_save(tmp_path):
    cfg = CheckpointConfig(async_save=True, keep_checkpoint_max=2)
    cb = ModelCheckpoint(directory=str(tmp_path), config=cfg)
    _run(cb, Net(), epochs=1, batch_num=5)
    assert not [t for t in threading.enumerate() if t.name == "asyn_save_ckpt"]
    assert _ckpts(tmp_path) == ["CKP-1_4.ckpt", "CKP-1_5.ckpt"]
    assert load_checkpoint(cb.latest_ckpt_file_name)["w"].asnumpy()[0, 0] == 5.0


def test_save_on_exception(tmp_path):
    params = Params(train_network=Net(), batch_num=4, cur_epoch_num=2, cur_step_num=6)
    plain = ModelCheckpoint(directory=str(tmp_path))
    assert plain.save_on_exception(params) is None
    cfg = CheckpointConfig(exception_save=True, append_info=["step_num"])
    cb = ModelCheckpoint(directory=str(tmp_path), config=cfg)
    path = cb.save_on_exception(params)
    assert os.path.basename(path) == "CKP-2_6_breakpoint.ckpt"
    assert int(load_checkpoint(path)["step_num"]) == 6
    assert os.path.basename(cb.save_on_exception(params)) == "CKP_1-2_6_breakpoint.ckpt"
    # breakpoint files neither rename the normal prefix nor count in its rotation
    assert ModelCheckpoint(directory=str(tmp_path)).prefix == "CKP"


def test_directory_is_created_and_defaults_to_cwd(tmp_path, monkeypatch):
    target = tmp_path / "a" / "b"
    cb = ModelCheckpoint(directory=str(target))
    assert target.is_dir() and cb.directory == os.path.realpath(target)
    monkeypatch.chdir(tmp_path)
    assert ModelCheckpoint().directory == str(tmp_path)


def test_config_errors():
    with pytest.raises(ValueError, match="can't all be None or 0"):
        CheckpointConfig(0, 0, 0, 0)
    with pytest.raises(ValueError, match="save_checkpoint_steps"):
        CheckpointConfig(save_checkpoint_steps=-1)
    with pytest.raises(TypeError, match="keep_checkpoint_max"):
        CheckpointConfig(keep_checkpoint_max=True)
    with pytest.raises(TypeError, match="keep_checkpoint_max"):
        CheckpointConfig(keep_checkpoint_max=2.5)
    with pytest.raises(TypeError, match="saved_network"):
        CheckpointConfig(saved_network="net")
    with pytest.raises(TypeError, match="append_info"):
        CheckpointConfig(append_info="epoch_num")
    with pytest.raises(ValueError, match="append_info"):
        CheckpointConfig(append_info=["epochs"])
    with pytest.raises(TypeError, match="only one dict"):
        CheckpointConfig(append_info=[{"a": 1}, {"b": 2}])
    with pytest.raises(TypeError, match="'a'"):
        CheckpointConfig(append_info=[{"a": [1]}])
    with pytest.raises(TypeError, match="str or dict"):
        CheckpointConfig(append_info=[3])
    with pytest.raises(ValueError, match="enc_key.*not supported"):
        CheckpointConfig(enc_key=b"0123456789abcdef")
    with pytest.raises(TypeError, match="async_save"):
        CheckpointConfig(async_save=1)


def test_model_checkpoint_errors(tmp_path):
    with pytest.raises(ValueError, match="prefix"):
        ModelCheckpoint(prefix="a/b", directory=str(tmp_path))
    with pytest.raises(ValueError, match="prefix"):
        ModelCheckpoint(prefix=3, directory=str(tmp_path))
    with pytest.raises(TypeError, match="config"):
        ModelCheckpoint(directory=str(tmp_path), config={"save_checkpoint_steps": 1})
    with pytest.raises(TypeError, match="directory"):
        ModelCheckpoint(directory=3)


class _DropNet(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Dense(4, 8)
        self.drop = nn.Dropout(keep_prob=0.8)
        self.fc2 = nn.Dense(8, 3)

    def construct(self, x):
        return self.fc2(self.drop(self.fc1(x)))


def test_model_train_resumes_bit_identically_from_model_checkpoint(tmp_path):
    """Model.train + ModelCheckpoint, then a fresh Model loads the epoch-1 file and finishes."""
    from sporeling.core import load_param_into_net, random_state
    from sporeling.core.train import ArrayDataset, Model

    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    y = rng.integers(0, 3, 32).astype(np.int32)

    def build(seed):
        random_state.set_seed(seed)  # a restarted process initialises differently
        net = _DropNet()
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
        return Model(net, loss, opt)

    model = build(1)
    random_state.set_seed(5)
    cfg = CheckpointConfig(save_checkpoint_steps=4, keep_checkpoint_max=10)
    cb = ModelCheckpoint(prefix="r", directory=str(tmp_path), config=cfg)
    ds = ArrayDataset(x, y, batch_size=8, shuffle=True, seed=3)
    model.train(3, ds, callbacks=[cb], dataset_sink_mode=False)
    assert _ckpts(tmp_path) == ["r-1_4.ckpt", "r-2_4.ckpt", "r-3_4.ckpt"]
    reference = {p.name: p.asnumpy().copy() for p in model.train_network.get_parameters()}

    path = str(tmp_path / "r-1_4.ckpt")
    resumed = build(9)
    meta = load_checkpoint_metadata(path)
    assert (meta["epoch"], meta["step"]) == (1, 4)
    not_loaded, unused = load_param_into_net(resumed.train_network, load_checkpoint(path))
    assert not_loaded == [] and unused == []
    random_state.set_rng_state(meta["rng_state"])
    ds2 = ArrayDataset(x, y, batch_size=8, shuffle=True, seed=3)  # fresh: Model seeks it
    resumed.train(3, ds2, dataset_sink_mode=False, initial_epoch=meta["epoch"])
    for p in resumed.train_network.get_parameters():
        assert p.asnumpy().tobytes() == reference[p.name].tobytes(), p.name


def test_model_saves_a_breakpoint_checkpoint_when_training_raises(tmp_path):
    from sporeling.core import Model, nn
    from sporeling.core.train import ArrayDataset

    class Boom(Exception):
        pass

    class Explode(Callback):
        def on_train_step_end(self, run_context):
            if run_context.original_args().cur_step_num == 3:
                raise Boom("step 3")

    net = nn.Dense(4, 2)
    model = Model(net, nn.MSELoss(), nn.SGD(net.trainable_params(), 0.01))
    x = np.random.default_rng(0).standard_normal((32, 4)).astype(np.float32)
    y = np.zeros((32, 2), np.float32)
    cfg = CheckpointConfig(save_checkpoint_steps=100, exception_save=True)
    cb = ModelCheckpoint(prefix="e", directory=str(tmp_path), config=cfg)
    with pytest.raises(Boom):
        model.train(1, ArrayDataset(x, y, batch_size=8), callbacks=[cb, Explode()])
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith("_breakpoint.ckpt")]
