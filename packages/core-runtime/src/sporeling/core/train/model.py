"""``Model``: MindSpore 1.8's high-level train / eval / predict / fit loop.

``Model(network, loss_fn, optimizer, metrics)`` wraps ``network`` as MindSpore does:
``TrainOneStepCell(WithLossCell(network, loss_fn), optimizer)`` for training and
``WithEvalCell(network, loss_fn)`` for evaluation (outputs ``(loss, logits, label)``, read
through ``eval_indexes=[0, 1, 2]``). Datasets are anything with
``create_tuple_iterator(num_epochs=..., output_numpy=...)`` and ``get_dataset_size()``,
such as :class:`~sporeling.core.train.ArrayDataset`. Data always goes to the network
directly: ``dataset_sink_mode``/``sink_size`` are validated and otherwise ignored, as
MindSpore does on CPU.

Under ``set_context(mode=GRAPH_MODE)`` the training network is the outermost cell each
step calls, so the whole step (forward, backward and the optimizer's update) compiles into
one graph on its first batch of each shape and runs compiled after
(tests/train/test_model_graph_mode.py checks the losses and weights against PYNATIVE_MODE).

``fit`` trains and validates: after each validated epoch (``valid_frequency`` an int k:
every k-th epoch; a list: exactly those 1-based epochs) and *before* the epoch-end
callbacks, ``cb_params.eval_results`` holds ``{metric: value, ..., "eval_loss": mean}``;
it is removed again after the epoch-end callbacks.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from .. import _hooks
from ..autograd import no_grad
from ..errors import check_bool, check_int
from ..nn.cell import Cell
from ..tensor import Tensor
from . import callback as _callback_pkg
from .callback._callback import Callback, RunContext, _CallbackManager, _InternalCallbackParam
from .metrics import Loss, get_metrics

__all__ = ["Model"]

_OLD_HOOKS = {"begin", "end", "epoch_begin", "epoch_end", "step_begin", "step_end"}
_AMP_LEVELS = ("O0", "O1", "O2", "O3", "auto")
_BOOST_LEVELS = ("O0", "O1", "O2")
_KWARGS = ("loss_scale_manager", "keep_batchnorm_fp32", "boost_config_dict")


def _check_dataset(where: str, name: str, dataset: Any) -> int:
    if not callable(getattr(dataset, "create_tuple_iterator", None)) or not callable(
        getattr(dataset, "get_dataset_size", None)
    ):
        raise TypeError(
            f"{where}: argument '{name}' expected a dataset with create_tuple_iterator() and "
            f"get_dataset_size() (e.g. train.ArrayDataset), got {type(dataset).__name__}"
        )
    size = int(dataset.get_dataset_size())
    if size == 0:
        raise ValueError(f"{where}: argument '{name}' holds no data (get_dataset_size() is 0)")
    return size


def _to_tuple(element: Any) -> tuple[Any, ...]:
    if isinstance(element, Tensor):
        return (element,)
    if isinstance(element, dict):
        return tuple(element.values())
    return tuple(element)


def _internal_callback_names() -> set[str]:
    return set(_callback_pkg.__all__)


class Model:
    """High-level training and inference (``mindspore.Model``).

    Args:
        network: the network (a Cell). With ``loss_fn`` it maps data to logits; without,
            it computes the loss itself (or is a whole training cell when there is also no
            optimizer).
        loss_fn: loss Cell ``loss_fn(logits, label)``, or None.
        optimizer: an ``nn.Optimizer`` over the network's parameters, or None.
        metrics: a set of metric names (``{'accuracy', 'loss'}``) or a dict
            ``{name: Metric}``, used by ``eval`` and ``fit``.
        eval_network: the evaluation network; defaults to ``WithEvalCell(network, loss_fn)``.
        eval_indexes: positions of (loss, prediction, label) in ``eval_network``'s outputs.
        amp_level: mixed precision; only ``'O0'`` (full precision) is supported so far.
        boost_level: ``'O0'``, ``'O1'`` or ``'O2'``; boosting is not implemented (no effect).
        **kwargs: ``loss_scale_manager``, ``keep_batchnorm_fp32``, ``boost_config_dict``.
    """

    def __init__(
        self,
        network: Cell,
        loss_fn: Cell | None = None,
        optimizer: Cell | None = None,
        metrics: Any = None,
        eval_network: Cell | None = None,
        eval_indexes: list[int] | None = None,
        amp_level: str = "O0",
        boost_level: str = "O0",
        **kwargs: Any,
    ) -> None:
        if not isinstance(network, Cell):
            raise TypeError(
                f"Model: argument 'network' expected a Cell, got {type(network).__name__}"
            )
        for arg in kwargs:
            if arg not in _KWARGS:
                raise ValueError(
                    f"Model: unexpected keyword argument {arg!r}; accepted: {list(_KWARGS)}"
                )
        self._network = network
        self._loss_fn = loss_fn
        self._optimizer = optimizer
        self._loss_scale_manager = kwargs.get("loss_scale_manager")
        self._keep_bn_fp32 = kwargs.get("keep_batchnorm_fp32")
        self._amp_level = amp_level
        self._boost_level = boost_level
        self._metrics = metrics
        self._parallel_mode = _hooks.parallel.get_auto_parallel_context("parallel_mode")
        self._device_number = _hooks.parallel.get_auto_parallel_context("device_num")
        self._check_amp_level_arg(optimizer, amp_level)
        self._check_boost_level(boost_level)
        self._train_network = self._build_train_network()
        self._build_eval_network(metrics, eval_network, eval_indexes)
        self._predict_network = self._network
        self._current_epoch_num = 0
        self._current_step_num = 0

    # ---- construction -------------------------------------------------------------------
    @staticmethod
    def _check_amp_level_arg(optimizer: Any, amp_level: Any) -> None:
        if amp_level not in _AMP_LEVELS:
            raise ValueError(
                f"Model: argument 'amp_level' expected one of {list(_AMP_LEVELS)}, "
                f"got {amp_level!r}"
            )
        if optimizer is None and amp_level != "O0":
            raise ValueError(
                "Model: mixed precision (amp_level={amp_level!r}) needs an optimizer; set "
                "amp_level='O0' or pass 'optimizer'"
            )

    @staticmethod
    def _check_boost_level(boost_level: Any) -> None:
        if boost_level not in _BOOST_LEVELS:
            raise ValueError(
                f"Model: argument 'boost_level' expected one of {list(_BOOST_LEVELS)}, "
                f"got {boost_level!r}"
            )
        if boost_level != "O0":
            warnings.warn(
                f"Model: boost_level={boost_level!r} has no effect in Sporeling (no boost "
                "algorithms); training runs as with 'O0'",
                UserWarning,
                stacklevel=3,
            )

    def _build_train_network(self) -> Cell:
        from .. import nn

        network = self._network
        lsm = self._loss_scale_manager
        if lsm is not None and self._optimizer is None:
            raise ValueError("Model: 'optimizer' can not be None when 'loss_scale_manager' is set")
        if self._amp_level not in ("O0", "auto") and self._optimizer is not None:
            from .amp import build_train_network  # mixed precision: MindSpore's amp levels

            kw = {"loss_scale_manager": lsm, "keep_batchnorm_fp32": self._keep_bn_fp32}
            return build_train_network(
                network, self._optimizer, self._loss_fn, self._amp_level, **kw
            ).set_train()
        if self._optimizer is not None:
            if self._loss_fn is not None:
                network = nn.WithLossCell(network, self._loss_fn)
            sens = 1.0
            if lsm is not None:
                sens = float(lsm.get_loss_scale())
                update_cell = lsm.get_update_cell()
                if update_cell is not None:
                    cell_cls = getattr(nn, "TrainOneStepWithLossScaleCell", None)
                    if cell_cls is None:
                        raise ValueError(
                            "Model: a dynamic loss_scale_manager needs "
                            "nn.TrainOneStepWithLossScaleCell, which is not available; use "
                            "FixedLossScaleManager(drop_overflow_update=False)"
                        )
                    return cell_cls(network, self._optimizer, scale_sense=update_cell).set_train()
            network = nn.TrainOneStepCell(network, self._optimizer, sens)
        elif self._loss_fn is not None:
            network = nn.WithLossCell(network, self._loss_fn)
        return network.set_train()

    def _build_eval_network(self, metrics: Any, eval_network: Any, eval_indexes: Any) -> None:
        self._metric_fns = get_metrics(metrics) or {}
        self._eval_network = eval_network
        self._eval_indexes = eval_indexes
        if not self._metric_fns:
            return
        if eval_network is not None:
            if eval_indexes is not None and not (
                isinstance(eval_indexes, list) and len(eval_indexes) == 3
            ):
                raise ValueError(
                    "Model: argument 'eval_indexes' expected None or a list of 3 positions "
                    f"(loss, prediction, label), got {eval_indexes!r}"
                )
            return
        if self._loss_fn is None:
            raise ValueError(
                "Model: 'metrics' is set but there is neither an 'eval_network' nor a "
                "'loss_fn' to build one from; pass eval_network (and eval_indexes), or "
                "loss_fn for the simple (data, label) -> logits case, or drop 'metrics'"
            )
        from .. import nn

        self._eval_network = nn.WithEvalCell(self._network, self._loss_fn, False)
        self._eval_indexes = [0, 1, 2]

    # ---- public attributes --------------------------------------------------------------
    @property
    def train_network(self) -> Cell:
        """The network one training step calls (e.g. TrainOneStepCell)."""
        return self._train_network

    @property
    def predict_network(self) -> Cell:
        return self._predict_network

    @property
    def eval_network(self) -> Cell | None:
        return self._eval_network

    # ---- metrics ------------------------------------------------------------------------
    def _clear_metrics(self) -> None:
        for metric in self._metric_fns.values():
            metric.clear()

    def _update_metrics(self, outputs: Any) -> None:
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        if isinstance(outputs, list):
            outputs = tuple(outputs)
        if not isinstance(outputs, tuple):
            raise ValueError(
                f"Model: the eval network must return a Tensor or a tuple, got "
                f"{type(outputs).__name__}"
            )
        if self._eval_indexes is not None and len(outputs) < 3:
            raise ValueError(
                f"Model: with eval_indexes the eval network must return at least 3 outputs, "
                f"got {len(outputs)}"
            )
        for metric in self._metric_fns.values():
            if self._eval_indexes is None:
                metric.update(*outputs)
            elif isinstance(metric, Loss):
                metric.update(outputs[self._eval_indexes[0]])
            else:
                metric.update(outputs[self._eval_indexes[1]], outputs[self._eval_indexes[2]])

    def _get_metrics(self) -> dict[str, Any]:
        return {key: metric.eval() for key, metric in self._metric_fns.items()}

    # ---- callbacks ----------------------------------------------------------------------
    @staticmethod
    def _transform_callbacks(callbacks: Any) -> list[Any]:
        if callbacks is None:
            return []
        if isinstance(callbacks, Iterable) and not isinstance(callbacks, (str, bytes)):
            return list(callbacks)
        return [callbacks]

    @staticmethod
    def _check_methods_for_custom_callbacks(callbacks: Any, current_mode: str) -> None:
        """Old-style hook names on custom callbacks: ValueError under fit, a warning else."""
        internal = _internal_callback_names()
        for cb in Model._transform_callbacks(callbacks):
            cls = type(cb)
            if cls.__name__ in internal:
                continue
            own: set[str] = set()
            for klass in cls.__mro__:
                if klass is Callback or klass is object or klass.__name__ in internal:
                    break
                own |= set(vars(klass))
            invalid = sorted(own & _OLD_HOOKS)
            if not invalid:
                continue
            msg = (
                f"callback {cls.__name__} defines the old-style hooks {invalid}, which may not "
                "be supported in later versions; define methods prefixed with 'on_train_' or "
                "'on_eval_' instead"
            )
            if current_mode in ("train", "eval"):
                warnings.warn(msg, FutureWarning, stacklevel=4)
            else:
                raise ValueError(f"Model.fit: {msg}")

    # ---- training -----------------------------------------------------------------------
    def _check_train_args(
        self, where: str, epoch: Any, train_dataset: Any, dataset_sink_mode: Any,
        sink_size: Any, initial_epoch: Any,
    ) -> None:  # fmt: skip
        check_bool(where, "dataset_sink_mode", dataset_sink_mode)
        if isinstance(sink_size, bool) or not isinstance(sink_size, int):
            raise TypeError(f"{where}: argument 'sink_size' expected an int, got {sink_size!r}")
        check_int(where, "epoch", epoch, 0)
        check_int(where, "initial_epoch", initial_epoch, 0)
        if initial_epoch >= epoch:
            raise ValueError(
                f"{where}: argument 'epoch' (the final epoch) must be greater than "
                f"'initial_epoch', got epoch={epoch}, initial_epoch={initial_epoch}"
            )
        _check_dataset(where, "train_dataset", train_dataset)
        if sink_size < -1 or sink_size == 0:
            raise ValueError(
                f"{where}: argument 'sink_size' must be -1 or positive, got {sink_size}"
            )

    def train(
        self,
        epoch: int,
        train_dataset: Any,
        callbacks: Any = None,
        dataset_sink_mode: bool = True,
        sink_size: int = -1,
        initial_epoch: int = 0,
    ) -> None:
        """Train for epochs ``initial_epoch + 1 .. epoch`` over ``train_dataset``.

        ``callbacks``: a Callback or a list of them. ``run_context.request_stop()`` in a
        callback ends training after the current step (the epoch-end callbacks still run).
        """
        self._check_train_args(
            "Model.train", epoch, train_dataset, dataset_sink_mode, sink_size, initial_epoch
        )
        if callbacks:
            self._check_methods_for_custom_callbacks(callbacks, "train")
        self._train(epoch, train_dataset, callbacks, initial_epoch, (None, 1, False))

    def fit(
        self,
        epoch: int,
        train_dataset: Any,
        valid_dataset: Any = None,
        valid_frequency: int | list[int] = 1,
        callbacks: Any = None,
        dataset_sink_mode: bool = True,
        valid_dataset_sink_mode: bool = True,
        sink_size: int = -1,
        initial_epoch: int = 0,
    ) -> None:
        """Train, validating on ``valid_dataset`` after the epochs ``valid_frequency`` picks.

        Validation runs before the epoch-end callbacks, which find the results in
        ``run_context.original_args().eval_results`` (metric names and ``"eval_loss"``).
        Custom callbacks must use the ``on_train_*``/``on_eval_*`` hook names.
        """
        where = "Model.fit"
        check_bool(where, "valid_dataset_sink_mode", valid_dataset_sink_mode)
        self._check_train_args(
            where, epoch, train_dataset, dataset_sink_mode, sink_size, initial_epoch
        )
        if isinstance(valid_frequency, bool) or not isinstance(valid_frequency, (int, list)):
            raise TypeError(
                f"{where}: argument 'valid_frequency' expected an int or a list of epochs, "
                f"got {type(valid_frequency).__name__}"
            )
        if isinstance(valid_frequency, int) and valid_frequency < 1:
            raise ValueError(
                f"{where}: argument 'valid_frequency' expected a positive int, got "
                f"{valid_frequency}"
            )
        if isinstance(valid_frequency, list) and not all(
            isinstance(e, int) and not isinstance(e, bool) for e in valid_frequency
        ):
            raise TypeError(
                f"{where}: argument 'valid_frequency' as a list must hold epoch numbers (ints), "
                f"got {valid_frequency!r}"
            )
        if valid_dataset is not None:
            if not self._metric_fns:
                raise ValueError(
                    f"{where}: 'valid_dataset' is given but the model has no metrics; pass "
                    "Model(..., metrics={...})"
                )
            _check_dataset(where, "valid_dataset", valid_dataset)
        if callbacks:
            self._check_methods_for_custom_callbacks(callbacks, "fit")
        self._train(
            epoch, train_dataset, callbacks, initial_epoch, (valid_dataset, valid_frequency, False)
        )

    def _train(
        self,
        epoch: int,
        train_dataset: Any,
        callbacks: Any,
        initial_epoch: int,
        valid_infos: tuple[Any, Any, bool],
    ) -> None:
        cb_params = _InternalCallbackParam()
        cb_params.train_network = self._train_network
        cb_params.epoch_num = epoch - initial_epoch
        cb_params.initial_epoch = initial_epoch
        cb_params.batch_num = int(train_dataset.get_dataset_size())
        cb_params.mode = "train"
        cb_params.loss_fn = self._loss_fn
        cb_params.optimizer = self._optimizer
        cb_params.parallel_mode = self._parallel_mode
        cb_params.device_number = self._device_number
        cb_params.train_dataset = train_dataset
        cb_params.list_callback = self._transform_callbacks(callbacks)
        cb_params.train_dataset_element = None
        cb_params.network = self._network
        cb_params.net_outputs = None
        cb_params.last_save_ckpt_step = None
        cb_params.latest_ckpt_file = None
        with _CallbackManager(cb_params.list_callback) as list_callback:
            try:
                self._train_process(
                    epoch, train_dataset, list_callback, cb_params, initial_epoch, valid_infos
                )
            except Exception:
                # CheckpointConfig(exception_save=True): keep what was trained, then re-raise.
                for cb in cb_params.list_callback:
                    if hasattr(cb, "save_on_exception"):
                        cb.save_on_exception(cb_params)
                raise

    @staticmethod
    def _should_eval(epoch: int, valid_frequency: int | list[int]) -> bool:
        if isinstance(valid_frequency, int):
            return epoch % valid_frequency == 0
        return epoch in valid_frequency

    def _train_process(
        self,
        epoch: int,
        train_dataset: Any,
        list_callback: _CallbackManager,
        cb_params: _InternalCallbackParam,
        initial_epoch: int,
        valid_infos: tuple[Any, Any, bool],
    ) -> None:
        network = self._train_network
        # Resuming at initial_epoch: datasets that can seek to an epoch replay its order.
        if initial_epoch and getattr(train_dataset, "epoch", initial_epoch) < initial_epoch:
            train_dataset.set_epoch(initial_epoch)
        data = train_dataset.create_tuple_iterator(
            num_epochs=epoch - initial_epoch, output_numpy=False
        )
        cb_params.cur_step_num = 0
        cb_params.dataset_sink_mode = False
        run_context = RunContext(cb_params)
        list_callback.on_train_begin(run_context)
        for i in range(initial_epoch, epoch):
            cb_params.cur_epoch_num = i + 1
            self._current_epoch_num = i + 1
            self._current_step_num = 0
            list_callback.on_train_epoch_begin(run_context)
            should_stop = False
            for element in data:
                inputs = _to_tuple(element)
                if self._loss_fn is not None and len(inputs) != 2:
                    raise ValueError(
                        "Model: with a 'loss_fn' the training dataset must give two columns "
                        f"(data, label) per batch, got {len(inputs)}"
                    )
                cb_params.cur_step_num += 1
                self._current_step_num = (cb_params.cur_step_num - 1) % cb_params.batch_num + 1
                cb_params.train_dataset_element = inputs
                list_callback.on_train_step_begin(run_context)
                if not network.training:
                    network.set_train(True)
                outputs = network(*inputs)
                cb_params.net_outputs = outputs
                self._update_loss_scale(outputs)
                list_callback.on_train_step_end(run_context)
                should_stop = run_context.get_stop_requested()
                if should_stop:
                    break
            self._eval_during_train(valid_infos, cb_params, list_callback)
            list_callback.on_train_epoch_end(run_context)
            cb_params.pop("metrics", None)
            cb_params.pop("eval_results", None)
            if should_stop or run_context.get_stop_requested():
                break
        list_callback.on_train_end(run_context)

    def _update_loss_scale(self, outputs: Any) -> None:
        lsm = self._loss_scale_manager
        if lsm is None or not getattr(lsm, "get_drop_overflow_update", lambda: False)():
            return
        if isinstance(outputs, (tuple, list)) and len(outputs) > 1:
            overflow = outputs[1]
            flag = overflow.asnumpy().all() if isinstance(overflow, Tensor) else bool(overflow)
            lsm.update_loss_scale(bool(flag))

    def _eval_during_train(
        self, valid_infos: tuple[Any, Any, bool], cb_params: Any, list_callback: Any
    ) -> None:
        valid_dataset, valid_frequency, _ = valid_infos
        if valid_dataset is None or not self._should_eval(cb_params.cur_epoch_num, valid_frequency):
            return
        saved = {
            k: cb_params.get(k)
            for k in ("cur_step_num", "batch_num", "dataset_sink_mode", "net_outputs")
        }
        internal = _internal_callback_names()
        eval_callbacks = [
            cb
            for cb in list_callback._callbacks
            if type(cb).__name__ not in internal or type(cb).__name__ == "TimeMonitor"
        ]
        cb_params.eval_network = self._eval_network
        cb_params.valid_dataset = valid_dataset
        cb_params.batch_num = int(valid_dataset.get_dataset_size())
        cb_params.mode = "eval"
        cb_params.cur_step_num = 0
        self._clear_metrics()
        self._eval_process(valid_dataset, _CallbackManager(eval_callbacks), cb_params, True)
        cb_params.mode = "train"
        for k, v in saved.items():
            cb_params[k] = v

    # ---- evaluation ---------------------------------------------------------------------
    def _eval_process(
        self, valid_dataset: Any, list_callback: Any, cb_params: Any, add_eval_loss: bool = False
    ) -> dict[str, Any]:
        run_context = RunContext(cb_params)
        cb_params.dataset_sink_mode = False
        network = self._eval_network
        list_callback.on_eval_begin(run_context)
        data = valid_dataset.create_tuple_iterator(num_epochs=1, output_numpy=False)
        list_callback.on_eval_epoch_begin(run_context)
        eval_loss = Loss() if add_eval_loss and self._eval_indexes is not None else None
        for element in data:
            inputs = _to_tuple(element)
            cb_params.cur_step_num += 1
            cb_params.eval_dataset_element = inputs
            list_callback.on_eval_step_begin(run_context)
            if network.training:
                network.set_train(False)
            with no_grad():
                outputs = network(*inputs)
            cb_params.net_outputs = outputs
            list_callback.on_eval_step_end(run_context)
            self._update_metrics(outputs)
            if eval_loss is not None:
                eval_loss.update(outputs[self._eval_indexes[0]])
            if run_context.get_stop_requested():
                break
        list_callback.on_eval_epoch_end(run_context)
        metrics = self._get_metrics()
        cb_params.metrics = metrics
        if add_eval_loss:
            results = dict(metrics)
            if eval_loss is not None and eval_loss._total_num:
                results["eval_loss"] = eval_loss.eval()
            cb_params.eval_results = results
        list_callback.on_eval_end(run_context)
        return metrics

    def eval(
        self, valid_dataset: Any, callbacks: Any = None, dataset_sink_mode: bool = True
    ) -> dict[str, Any]:
        """Evaluate the metrics over ``valid_dataset``: ``{metric name: value}``."""
        check_bool("Model.eval", "dataset_sink_mode", dataset_sink_mode)
        if not self._metric_fns:
            raise ValueError("Model.eval: the model has no metrics; pass Model(..., metrics={...})")
        _check_dataset("Model.eval", "valid_dataset", valid_dataset)
        if callbacks:
            self._check_methods_for_custom_callbacks(callbacks, "eval")
        cb_params = _InternalCallbackParam()
        cb_params.eval_network = self._eval_network
        cb_params.valid_dataset = valid_dataset
        cb_params.batch_num = int(valid_dataset.get_dataset_size())
        cb_params.mode = "eval"
        cb_params.cur_step_num = 0
        cb_params.list_callback = self._transform_callbacks(callbacks)
        cb_params.network = self._network
        self._clear_metrics()
        with _CallbackManager(cb_params.list_callback) as list_callback:
            return self._eval_process(valid_dataset, list_callback, cb_params)

    # ---- inference ----------------------------------------------------------------------
    def predict(self, *predict_data: Any) -> Any:
        """The network's output for ``predict_data`` (evaluation mode, no gradients)."""
        _check_predict_data(predict_data)
        network = self._predict_network
        if network.training:
            network.set_train(False)
        with no_grad():
            return network(*predict_data)

    def __repr__(self) -> str:
        return (
            f"Model(network={type(self._network).__name__}, "
            f"loss_fn={type(self._loss_fn).__name__ if self._loss_fn is not None else None}, "
            f"optimizer={type(self._optimizer).__name__ if self._optimizer is not None else None}, "
            f"metrics={sorted(self._metric_fns)})"
        )


def _check_predict_data(data: Any) -> None:
    for item in data:
        if isinstance(item, (list, tuple)):
            _check_predict_data(item)
        elif item is not None and not isinstance(item, (Tensor, int, float, str)):
            raise TypeError(
                "Model.predict: inputs must be Tensors (or numbers, strings, None, and "
                f"lists/tuples of them), got {type(item).__name__}"
            )
