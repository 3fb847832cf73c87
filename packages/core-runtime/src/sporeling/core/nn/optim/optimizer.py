"""``Optimizer``: MindSpore 1.8's optimizer base over flat, fused parameter storage.

At creation the optimizer moves the data of its parameters into one contiguous buffer per
(device, dtype) -- a *bank* -- and rebinds every ``Parameter._data`` to a view of it; the
optimizer state (moments...) gets matching buffers, and the gradients of a step are gathered
into one more. One update call per bank and step then touches every parameter: a serial
Numba kernel (:mod:`sporeling.core.kernels.cpu.optim`) for float32/float64 on the CPU, the
xp-generic rules of :mod:`._updates` otherwise (CuPy on the GPU, float16). Per-parameter
learning rates and weight decays travel as small arrays, so parameter groups share the call.

Anything that rebinds a parameter's data (``set_data``, ``assign_value``, loading a
checkpoint) is noticed at the next step: the new values are copied into the bank and the
view is restored. A change of shape or dtype after creation raises ``ValueError``.

Row-sparse gradients: a gradient may be any object with ``indices`` (1-D integer rows),
``values`` (``(len(indices), *param.shape[1:])``) and ``dense_shape`` (the parameter's shape)
-- the attributes of MindSpore's ``RowTensor``. ``LazyAdam`` and ``FTRL`` update only those
rows (duplicate indices are summed first); the other optimizers densify the gradient.

Weight decay follows MindSpore: without groups it skips parameters whose name contains
``'beta'`` or ``'gamma'``; with groups each group's ``weight_decay`` (or the default) applies
to all its parameters. Gradients are divided by ``loss_scale``. ``global_step`` counts calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ... import _hooks
from ..._backend import CPU, is_host, scatter_at
from ..._primitive import Primitive
from ...errors import describe
from ...kernels.cpu import _rows
from ...kernels.cpu import optim as _optim_kernels
from ...kernels.cpu.optim import on_blocks
from ...parameter_tuple import ParameterTuple
from ...tensor import Parameter, Tensor
from .._flatten_weights import flat_buffer_of
from ..cell import Cell
from ..containers import CellList
from ..learning_rate_schedule import LearningRateSchedule

__all__ = ["Optimizer"]

_GROUP_KEYS = ("params", "lr", "weight_decay", "grad_centralization", "order_params")


def _is_row_sparse(g: Any) -> bool:
    return hasattr(g, "indices") and hasattr(g, "values") and hasattr(g, "dense_shape")


def _raw(x: Any) -> Any:
    return x._data if isinstance(x, Tensor) else x


class _IteratorLearningRate(Cell):
    """A list of per-step learning rates as a Cell; steps past the end keep the last value."""

    def __init__(self, values: Any, name: str) -> None:
        super().__init__()
        self.learning_rate = Parameter(
            np.asarray(values, dtype=np.float32).reshape(-1), name, requires_grad=False
        )

    def value(self, step: float) -> float:
        data = self.learning_rate.asnumpy()
        return float(data[min(int(step), data.shape[0] - 1)])

    def construct(self, global_step: Any) -> Tensor:
        return Tensor(np.float32(self.value(float(_raw(global_step).reshape(-1)[0]))))


class _ConvertToCell(Cell):
    """A fixed learning-rate Parameter inside a list of dynamic (Cell) group rates."""

    def __init__(self, learning_rate: Parameter) -> None:
        super().__init__()
        self.learning_rate = learning_rate

    def value(self, step: float) -> float:
        return float(self.learning_rate.asnumpy().reshape(-1)[0])

    def construct(self, global_step: Any) -> Tensor:
        return Tensor(np.float32(self.value(0)))


class _Bank:
    """The parameters of one (device, dtype) as views into one flat buffer, plus state."""

    def __init__(self, owner: str, params: list[Parameter], positions: list[int]) -> None:
        self.owner = owner
        self.params = params
        self.positions = positions
        self.device = params[0]._device
        xp = self.device.xp
        self.dtype = params[0]._data.dtype
        self.shapes = [p.shape for p in params]
        self.sizes = np.array([p.size for p in params], dtype=np.int64)
        # unsigned: the update kernels loop over range(off[s], off[s + 1]), and a signed index
        # makes Numba wrap negatives, which turns each loop into gathers (AdamW 5x slower)
        self.off = np.zeros(len(params) + 1, dtype=np.uint64)
        np.cumsum(self.sizes.astype(np.uint64), out=self.off[1:])
        total = int(self.off[-1])
        shared = flat_buffer_of(params, self.dtype, total)  # Cell.flatten_weights made it
        if shared is not None:
            self.flat, self.views = shared, [p._data for p in params]
        else:
            self.flat = xp.empty(total, self.dtype)
            self.views = self._adopt(self.flat, params)
        self.grad = xp.zeros(total, self.dtype)
        self.states: dict[str, tuple[Any, list[Parameter], list[Any]]] = {}
        self.lr = np.zeros(len(params))
        self.wd = np.zeros(len(params))
        self.sizes_dev = self.sizes if is_host(xp) else xp.asarray(self.sizes)
        self.fused = self.device is CPU and self.dtype in (np.float32, np.float64)
        self.slot_sizes = [int(n) for n in self.sizes]  # (Python ints: the hot checks)
        self._slot_views: dict[tuple[int, ...], Any] = {}

    def _adopt(self, flat: Any, params: list[Parameter]) -> list[Any]:
        views = []
        for p, a, b, shape in zip(params, self.off[:-1], self.off[1:], self.shapes):
            flat[a:b] = p._data.reshape(-1)
            view = flat[a:b].reshape(shape)
            p._data = view
            p._node = None
            views.append(view)
        return views

    def slot_views(self, states: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], Any]]:
        """Per slot, ``((flat view, state views...), off)`` for the fused kernels: the views
        of the flat buffers (which never move) and the slot's ``[0, size]`` offsets, made
        once per tuple of state buffers."""
        key = tuple([id(st) for st in states])
        hit = self._slot_views.get(key)
        if hit is None:
            views = []
            for slot in range(len(self.params)):
                a, b = int(self.off[slot]), int(self.off[slot + 1])
                head = (self.flat[a:b], *(st[a:b] for st in states))
                views.append((head, np.array([0, b - a], self.off.dtype)))
            # (the states are kept with their views: their ids cannot be reused meanwhile)
            hit = self._slot_views[key] = (states, views)
        return hit[1]

    def add_state(self, name: str, params: list[Parameter]) -> None:
        flat = self.device.xp.empty(int(self.off[-1]), self.dtype)
        self.states[name] = (flat, params, self._adopt(flat, params))

    def state(self, name: str) -> Any:
        return self.states[name][0]

    def sync(self) -> None:
        """Copy back the data of parameters someone rebound since the last step."""
        self._sync(self.params, self.views)
        for _, params, views in self.states.values():
            self._sync(params, views)

    def _sync(self, params: list[Parameter], views: list[Any]) -> None:
        for p, view in zip(params, views):
            data = p._data
            if data is view:
                continue
            if tuple(data.shape) != tuple(view.shape) or data.dtype != view.dtype:
                raise ValueError(
                    f"{self.owner}: parameter '{p.name}' changed from shape {tuple(view.shape)} "
                    f"and dtype {view.dtype} to {tuple(data.shape)} and {data.dtype} after the "
                    "optimizer was created; create the optimizer again"
                )
            view[...] = self.device.asarray(data)
            p._data = view
            p._node = None

    def typed(self, *values: Any) -> tuple[Any, ...]:
        """Scalars and per-parameter arrays in the bank's dtype, for the fused kernels."""
        t = self.dtype.type
        return tuple(v.astype(self.dtype) if isinstance(v, np.ndarray) else t(v) for v in values)

    def expand(self, seg: np.ndarray) -> Any:
        """Per-parameter values repeated to one per element (for the xp-generic rules)."""
        xp = self.device.xp
        return xp.repeat(xp.asarray(seg), self.sizes_dev)


def _step_abstract(*grads: Any, optimizer: Any) -> Any:
    from ..._primitive import ShapedArray
    from ...dtype import bool_

    return ShapedArray((), bool_)


def _step_impl(xp: Any, *grads: Any, optimizer: Any) -> Any:
    device = optimizer._banks[0].device if optimizer._banks else CPU
    optimizer.construct(tuple(Tensor._wrap(g, device) for g in grads))
    return xp.asarray(True)


#: One optimizer step as a primitive with a side effect (it updates the Parameters in
#: place), so that a whole training step — forward, backward, update — traces into one graph.
optimizer_step_p = Primitive("optimizer_step", "effect", _step_abstract, impl=_step_impl)


class Optimizer(Cell):
    """Base class of optimizers: ``Optimizer(learning_rate, parameters, weight_decay=0.0,
    loss_scale=1.0)``; ``optimizer(gradients)`` updates the parameters in place."""

    _rows_supported = False  # LazyAdam and FTRL update only the rows of sparse gradients

    def __init__(
        self, learning_rate: Any, parameters: Any, weight_decay: Any = 0.0, loss_scale: Any = 1.0
    ) -> None:
        super().__init__(auto_prefix=False)
        name = self.cls_name
        params = self._parameters_base_check(parameters, "parameters")
        if not all(isinstance(x, Parameter) for x in params) and not all(
            isinstance(x, dict) for x in params
        ):
            raise TypeError(
                f"{name}: argument 'parameters' expected a list of Parameters or a list of group "
                f"dicts, got {describe(params)}"
            )
        if isinstance(loss_scale, int) and not isinstance(loss_scale, bool):
            loss_scale = float(loss_scale)
        if not isinstance(loss_scale, float):
            raise TypeError(f"{name}: argument 'loss_scale' expected a float, got {loss_scale!r}")
        if not loss_scale > 0:
            raise ValueError(
                f"{name}: argument 'loss_scale' expected a float > 0, got {loss_scale}"
            )
        self.loss_scale = loss_scale
        self.need_scale = loss_scale != 1.0
        self.dynamic_lr = False
        self.dynamic_weight_decay = False
        self.is_group = isinstance(params[0], dict)
        self.is_group_lr = False
        self.is_group_params_ordered = False
        self.global_step = Parameter(np.zeros(1, np.int32), "global_step", requires_grad=False)
        default_lr = self._preprocess_single_lr(learning_rate)
        default_wd = self._preprocess_weight_decay(weight_decay)

        if self.is_group:
            plist, lrs, wds, gcs = self._init_group_params(params, default_lr, default_wd)
            flags = [isinstance(w, Cell) or w > 0 for w in wds]
        else:
            plist = params
            lr_obj = self._build_single_lr(default_lr, "learning_rate")
            lrs = [lr_obj] * len(plist)
            wds = [default_wd] * len(plist)
            gcs = [False] * len(plist)
            flags = ["beta" not in p.name and "gamma" not in p.name for p in plist]
        seen: set[int] = set()
        for p in plist:
            if id(p) in seen:
                raise ValueError(
                    f"{name}: parameter '{p.name}' appears twice in 'parameters'; pass each once"
                )
            seen.add(id(p))
            if p.dtype.category != 2:
                raise TypeError(
                    f"{name}: parameter '{p.name}' expected a floating dtype, got {p.dtype}"
                )
        self.parameters = ParameterTuple(plist)
        self._lr_objs = lrs
        self._wd_objs = wds
        self.decay_flags = tuple(flags)
        self.grad_centralization_flags = tuple(gcs)
        self.weight_decay = tuple(wds) if self.is_group else (wds[0] if wds else default_wd)
        self.exec_weight_decay = any(
            f and (isinstance(w, Cell) or w > 0) for f, w in zip(flags, wds)
        )
        self._set_learning_rate_attr(default_lr)
        self._build_banks()
        self.fused_kernel = True  # False forces the xp-generic rules (tests, debugging)
        # enable_parallel_optimizer: shard the state and the update over the data-parallel
        # group (sporeling.core.parallel.optimizer_parallel), read once, as MindSpore does.
        self.use_parallel = _hooks.parallel.parallel_optimizer_enabled()

    # ---- argument parsing -----------------------------------------------------------
    def _parameters_base_check(self, parameters: Any, what: str) -> list[Any]:
        if parameters is None:
            raise ValueError(f"{self.cls_name}: argument '{what}' must not be None")
        if not isinstance(parameters, Iterable) or isinstance(parameters, (str, dict, Tensor)):
            raise TypeError(
                f"{self.cls_name}: argument '{what}' expected an iterable of Parameters, "
                f"got {describe(parameters)}"
            )
        out = list(parameters)
        if not out:
            raise ValueError(f"{self.cls_name}: argument '{what}' must not be empty")
        return out

    def _preprocess_weight_decay(self, weight_decay: Any) -> Any:
        if isinstance(weight_decay, Cell):
            self.dynamic_weight_decay = True
            return weight_decay
        if isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float)):
            raise TypeError(
                f"{self.cls_name}: argument 'weight_decay' expected an int, float or Cell, "
                f"got {describe(weight_decay)}"
            )
        if weight_decay < 0:
            raise ValueError(
                f"{self.cls_name}: argument 'weight_decay' expected a value >= 0, "
                f"got {weight_decay}"
            )
        return float(weight_decay)

    def _preprocess_single_lr(self, learning_rate: Any) -> Any:
        name = self.cls_name
        if isinstance(learning_rate, bool):
            raise TypeError(f"{name}: argument 'learning_rate' expected a number, got a bool")
        if isinstance(learning_rate, (int, float)):
            if learning_rate < 0:
                raise ValueError(
                    f"{name}: argument 'learning_rate' expected a value >= 0, got {learning_rate}"
                )
            return float(learning_rate)
        if isinstance(learning_rate, Tensor):
            if learning_rate.ndim == 0:
                return learning_rate
            if learning_rate.ndim > 1:
                raise ValueError(
                    f"{name}: argument 'learning_rate' expected a 0-D or 1-D Tensor, "
                    f"got {describe(learning_rate)}"
                )
            self.dynamic_lr = True
            return learning_rate
        if isinstance(learning_rate, LearningRateSchedule):
            self.dynamic_lr = True
            return learning_rate
        if isinstance(learning_rate, Iterable) and not isinstance(learning_rate, (str, dict)):
            values = list(learning_rate)
            if not values:
                raise ValueError(f"{name}: argument 'learning_rate' must not be an empty list")
            self.dynamic_lr = True
            return Tensor(np.asarray(values, dtype=np.float32))
        raise TypeError(
            f"{name}: argument 'learning_rate' expected an int, float, Tensor, Iterable or "
            f"LearningRateSchedule, got {describe(learning_rate)}"
        )

    def _build_single_lr(self, learning_rate: Any, name: str) -> Any:
        if isinstance(learning_rate, float):
            return Parameter(np.float32(learning_rate), name, requires_grad=False)
        if isinstance(learning_rate, Tensor) and learning_rate.ndim == 0:
            return Parameter(Tensor(learning_rate, np.float32), name, requires_grad=False)
        if isinstance(learning_rate, Tensor):
            return _IteratorLearningRate(learning_rate.asnumpy(), name)
        return learning_rate  # a LearningRateSchedule

    def _init_group_params(
        self, groups: list[dict[str, Any]], default_lr: Any, default_wd: Any
    ) -> tuple[list[Parameter], list[Any], list[Any], list[bool]]:
        name = self.cls_name
        default_lr_obj = self._build_single_lr(default_lr, "learning_rate")
        plist: list[Parameter] = []
        lrs: list[Any] = []
        wds: list[Any] = []
        gcs: list[bool] = []
        ordered = None
        names: set[str] = set()
        for num, group in enumerate(groups):
            bad = [k for k in group if k not in _GROUP_KEYS]
            if bad:
                raise KeyError(
                    f"{name}: group {num} has unknown keys {bad}; expected some of {_GROUP_KEYS}"
                )
            if "order_params" in group:
                if len(group) > 1:
                    raise ValueError(
                        f"{name}: the 'order_params' group must hold only the 'order_params' key"
                    )
                if not isinstance(group["order_params"], Iterable):
                    raise TypeError(f"{name}: 'order_params' expected an iterable of Parameters")
                ordered = list(group["order_params"])
                self.is_group_params_ordered = True
                continue
            if "params" not in group:
                raise KeyError(f"{name}: group {num} has no 'params' key")
            gparams = self._parameters_base_check(group["params"], "group params")
            for p in gparams:
                if not isinstance(p, Parameter):
                    raise TypeError(
                        f"{name}: group {num} 'params' expected Parameters, got {describe(p)}"
                    )
                if p.name in names:
                    raise RuntimeError(
                        f"{name}: parameter '{p.name}' is set more than once in the groups"
                    )
                names.add(p.name)
            if "lr" in group:
                self.is_group_lr = True
                lr_obj = self._build_single_lr(
                    self._preprocess_single_lr(group["lr"]), f"learning_rate_group_{num}"
                )
            else:
                lr_obj = default_lr_obj
            wd = (
                self._preprocess_weight_decay(group["weight_decay"])
                if "weight_decay" in group
                else default_wd
            )
            gc = group.get("grad_centralization", False)
            if not isinstance(gc, bool):
                raise TypeError(f"{name}: 'grad_centralization' expected a bool, got {gc!r}")
            plist += gparams
            lrs += [lr_obj] * len(gparams)
            wds += [wd] * len(gparams)
            gcs += [gc] * len(gparams)
        if ordered is not None:
            if len(ordered) != len(plist):
                raise ValueError(
                    f"{name}: 'order_params' expected the {len(plist)} parameters of the groups, "
                    f"got {len(ordered)}"
                )
            where = {id(p): i for i, p in enumerate(plist)}
            try:
                idx = [where[id(p)] for p in ordered]
            except KeyError as exc:
                raise ValueError(
                    f"{name}: every parameter of 'order_params' must be in one group's 'params'"
                ) from exc
            plist = [plist[i] for i in idx]
            lrs = [lrs[i] for i in idx]
            wds = [wds[i] for i in idx]
            gcs = [gcs[i] for i in idx]
        return plist, lrs, wds, gcs

    def _set_learning_rate_attr(self, default_lr: Any) -> None:
        lrs = self._lr_objs
        if self.is_group_lr:
            distinct = list({id(x): x for x in lrs}.values())
            if self.dynamic_lr:
                cells = [x if isinstance(x, Cell) else _ConvertToCell(x) for x in lrs]
                wrapped = {id(x): c for x, c in zip(lrs, cells)}
                lst = CellList()
                lst._auto_prefix = False
                lst.extend(cells)
                self.learning_rate = lst
                self._lr_objs = [wrapped[id(x)] for x in lrs]
            else:
                for x in distinct:
                    self.insert_param_to_cell(x.name, x, check_name_contain_dot=False)
                # a plain attribute: the rates themselves are registered under their names
                object.__setattr__(self, "learning_rate", ParameterTuple(lrs))
        elif lrs:
            self.learning_rate = lrs[0]

    def _build_banks(self) -> None:
        groups: dict[tuple[Any, Any], list[int]] = {}
        for i, p in enumerate(self.parameters):
            groups.setdefault((id(p._device), p._data.dtype), []).append(i)
        self._banks = [
            _Bank(self.cls_name, [self.parameters[i] for i in idx], idx) for idx in groups.values()
        ]

    def _new_state(self, prefix: str, init: Any = "zeros") -> ParameterTuple:
        """Optimizer state shaped like the parameters: Parameters ``"<prefix>.<name>"``,
        registered on this Cell and stored in the banks."""
        state = self.parameters.clone(prefix=prefix, init=init)
        for p in state:
            p.requires_grad = False
            self.insert_param_to_cell(p.name, p, check_name_contain_dot=False)
        for bank in self._banks:
            bank.add_state(prefix, [state[i] for i in bank.positions])
        return state

    # ---- learning rate and weight decay ---------------------------------------------
    @staticmethod
    def _value(obj: Any, step: float) -> float:
        if isinstance(obj, Parameter):
            return float(obj.asnumpy().reshape(-1)[0])
        if hasattr(obj, "value") and callable(obj.value):
            return float(obj.value(step))
        out = obj(Tensor(np.array([step], np.int32)))
        return float(_raw(out).reshape(-1)[0])

    def _step_values(self, objs: list[Any]) -> list[float]:
        step = float(self.global_step._data[0])
        cache: dict[int, float] = {}
        out = []
        for obj in objs:
            key = id(obj)
            if key not in cache:
                cache[key] = obj if isinstance(obj, float) else self._value(obj, step)
            out.append(cache[key])
        return out

    def get_lr(self) -> Any:
        """The learning rate of this step (a tuple of one per parameter with group rates).

        As in MindSpore, optimizers call it once per step; it advances ``global_step``.
        """
        lrs = self._step_values(self._lr_objs)
        self.global_step._data[0] += 1
        if self.is_group_lr:
            return tuple(Tensor(np.float32(v)) for v in lrs)
        return Tensor(np.float32(lrs[0]))

    def get_weight_decay(self) -> Any:
        """The weight decay of this step (a tuple of one per parameter with groups)."""
        wds = self._step_values(self._wd_objs)
        return tuple(wds) if self.is_group else wds[0]

    def get_lr_parameter(self, param: Any) -> Any:
        """The learning-rate Parameter (or schedule Cell) used for ``param`` (or a list)."""
        if isinstance(param, Parameter):
            plist = [param]
        elif isinstance(param, list):
            plist = param
        else:
            raise TypeError(
                f"get_lr_parameter: argument 'param' expected a Parameter or list, "
                f"got {describe(param)}"
            )
        ids = {id(p): i for i, p in enumerate(self.parameters)}
        out = []
        for p in plist:
            if id(p) not in ids:
                raise ValueError(
                    f"get_lr_parameter: parameter {getattr(p, 'name', p)!r} is not in the optimizer"
                )
            obj = self._lr_objs[ids[id(p)]]
            out.append(obj.learning_rate if isinstance(obj, _ConvertToCell) else obj)
        return out if isinstance(param, list) else out[0]

    # ---- MindSpore's helpers for user-defined optimizers ----------------------------
    def decay_weight(self, gradients: Any) -> tuple[Any, ...]:
        """``gradient + weight_decay * loss_scale * param`` where the decay applies."""
        if not self.exec_weight_decay:
            return tuple(gradients)
        wds = self._step_values(self._wd_objs)
        return tuple(
            g + p * (wd * self.loss_scale) if flag and wd > 0 else g
            for g, p, wd, flag in zip(gradients, self.parameters, wds, self.decay_flags)
        )

    def scale_grad(self, gradients: Any) -> tuple[Any, ...]:
        """Gradients divided by ``loss_scale``."""
        if not self.need_scale:
            return tuple(gradients)
        return tuple(g * (1.0 / self.loss_scale) for g in gradients)

    def gradients_centralization(self, gradients: Any) -> tuple[Any, ...]:
        """Subtract the per-output-channel mean from gradients of groups that ask for it."""
        out = []
        for g, flag in zip(gradients, self.grad_centralization_flags):
            if flag and g.ndim > 1:
                g = Tensor._wrap(_centralize(_raw(g)), g._device)
            out.append(g)
        return tuple(out)

    # ---- the step ---------------------------------------------------------------------
    def __call__(self, gradients: Any) -> Any:
        """Apply one update; dense gradients go through ``optimizer_step`` (traceable)."""
        grads = tuple(gradients) if isinstance(gradients, (tuple, list)) else (gradients,)
        if any(_is_row_sparse(g) for g in grads) or not all(isinstance(g, Tensor) for g in grads):
            return super().__call__(gradients)  # row-sparse updates run eagerly
        return optimizer_step_p.bind(*grads, optimizer=self)

    def construct(self, gradients: Any) -> bool:
        grads = self._check_grads(gradients)
        wds = self._step_values(self._wd_objs)  # at the same step as the learning rate
        lrs = self._lr_list()
        flags = self.decay_flags
        eff_wd = [w if f else 0.0 for w, f in zip(wds, flags)]
        step = int(self.global_step._data[0])  # already advanced: 1 on the first call
        inv_scale = 1.0 / self.loss_scale
        for bank in self._banks:
            bank.sync()
            bank.lr[:] = [lrs[i] for i in bank.positions] if len(lrs) > 1 else lrs[0]
            bank.wd[:] = [eff_wd[i] for i in bank.positions]
            direct = self._direct_grads(bank, grads)
            if direct is not None:  # the fused kernel reads each gradient where it lies
                self._update_direct(bank, step, inv_scale, direct)
                continue
            rows = self._gather(bank, grads, inv_scale)
            if self.use_parallel:
                _hooks.parallel.sharded_update(self, bank, step, inv_scale, rows)
            else:
                self._update(bank, step, inv_scale, rows)
        return True

    def _lr_list(self) -> list[float]:
        lrs = self._step_values(self._lr_objs)
        self.global_step._data[0] += 1
        return lrs if self.is_group_lr else lrs[:1]

    def _check_grads(self, gradients: Any) -> tuple[Any, ...]:
        grads = tuple(gradients) if isinstance(gradients, (tuple, list)) else None
        if grads is None or len(grads) != len(self.parameters):
            raise ValueError(
                f"{self.cls_name}: argument 'gradients' expected a tuple of "
                f"{len(self.parameters)} gradients (one per parameter), got {describe(gradients)}"
            )
        for g, p in zip(grads, self.parameters):
            if type(g) is Tensor and g._data.shape == p._data.shape:
                continue  # (the common case, without the properties)
            shape = tuple(g.dense_shape) if _is_row_sparse(g) else getattr(g, "shape", None)
            if shape is None or tuple(shape) != p.shape:
                raise ValueError(
                    f"{self.cls_name}: gradient for '{p.name}' expected shape {p.shape}, "
                    f"got {describe(g)}"
                )
        return grads

    #: ``_update_direct(bank, step, inv_scale, flat_grads)``: the update from one flat
    #: gradient array per slot of the bank (read where the backward left them) instead of
    #: the gathered ``bank.grad``; None where the optimizer has no such kernel
    _update_direct: Any = None

    def _direct_grads(self, bank: _Bank, grads: tuple[Any, ...]) -> list[Any] | None:
        """One flat host array per slot when the optimizer has ``_update_direct`` and every
        gradient of ``bank`` can be read where it lies (dense, C-contiguous, the bank's
        dtype, no centralization, fused kernels on a host device, no optimizer sharding);
        else None (``_gather`` copies them into ``bank.grad``: 0.15 ms of a 0.45 ms
        Momentum step over an MLP's 535k parameters)."""
        if (
            self._update_direct is None
            or not self.fused_kernel
            or not bank.fused
            or self.use_parallel
            or not is_host(bank.device.xp)
        ):
            return None
        gcs = self.grad_centralization_flags
        dtype = bank.dtype
        sizes = bank.slot_sizes
        out = []
        for slot, i in enumerate(bank.positions):
            g = grads[i]
            if type(g) is not Tensor or gcs[i]:  # row-sparse gradients (RowTensor) gather
                return None
            d = g._data
            if (
                type(d) is not np.ndarray
                or (d.dtype is not dtype and d.dtype != dtype)
                or d.size != sizes[slot]  # (the kernels do not check bounds)
                or not d.flags.c_contiguous
            ):
                return None
            out.append(d.reshape(-1))
        return out

    @staticmethod
    def _run_slots(
        bank: _Bank,
        grads: list[Any],
        kernel: Any,
        states: tuple[Any, ...],
        per_slot: tuple[Any, ...],
        scalars: tuple[Any, ...],
    ) -> None:
        """``kernel(p, g, *states, off, *per_slot, *scalars)`` (a fused kernel's signature)
        slot by slot: each slot's parameters and states as views of the bank, its gradient
        where it lies, ``per_slot`` arrays cut to the slot; the same arithmetic element by
        element as one call over the bank."""
        views = bank.slot_views(states)
        # a slot below on_blocks' split size runs as its one call, without its wrappers
        # (~3 us of Python per slot: 8 slots are half of a LeNet step's Momentum update)
        split = _optim_kernels.UPDATE_SPLIT_FACTOR * _rows.PARALLEL_MIN
        for slot, g in enumerate(grads):
            head, off = views[slot]
            if len(per_slot) == 2:  # (lr, wd: every fused kernel's per-slot arrays)
                lr, wd = per_slot
                tail = (lr[slot : slot + 1], wd[slot : slot + 1], *scalars)
            else:
                tail = (*(arr[slot : slot + 1] for arr in per_slot), *scalars)
            if bank.slot_sizes[slot] < split:
                kernel(head[0], g, *head[1:], off, *tail)
            else:
                on_blocks(
                    off,
                    lambda off, head=head, g=g, tail=tail: kernel(
                        head[0], g, *head[1:], off, *tail
                    ),
                )

    def _gather(self, bank: _Bank, grads: tuple[Any, ...], inv_scale: float) -> list[Any]:
        """Fill ``bank.grad``; return ``(slot, rows, values)`` for row-sparse gradients that
        this optimizer updates lazily (their slots are left out of the dense update)."""
        xp = bank.device.xp
        sparse = []
        for slot, i in enumerate(bank.positions):
            g = grads[i]
            part = bank.grad[int(bank.off[slot]) : int(bank.off[slot + 1])]
            if _is_row_sparse(g):
                p = self.parameters[i]
                rows, vals = _dedup_rows(xp, g, p.shape, bank.dtype)
                if self._rows_supported:
                    # updated row by row, and its slot is left out of the dense update: its
                    # part of bank.grad is not read, so it is not filled (zeroing a 1M-row
                    # table's part cost 26 ms of a 90 ms Wide&Deep step)
                    sparse.append((slot, rows, vals))
                    continue
                dense = part.reshape(p.shape[0], -1)
                dense[...] = 0
                dense[rows] = vals
            else:
                part[...] = bank.device.asarray(_raw(g)).reshape(-1)
        gcs = self.grad_centralization_flags
        for slot, i in enumerate(bank.positions):
            if gcs[i] and len(bank.shapes[slot]) > 1:
                a, b = bank.off[slot], bank.off[slot + 1]
                g = bank.grad[a:b].reshape(bank.shapes[slot])
                if bank.wd[slot]:  # MindSpore centralizes after the decay and before scaling
                    g += (bank.wd[slot] * self.loss_scale) * bank.views[slot]
                    bank.wd[slot] = 0.0
                g[...] = _centralize(g)
        return sparse

    def _update(self, bank: _Bank, step: int, inv_scale: float, rows: list[Any]) -> None:
        raise NotImplementedError(f"{self.cls_name} must define _update or construct")

    def extend_repr(self) -> str:
        lr = self.learning_rate
        lr_text = (
            f"{float(lr.asnumpy().reshape(-1)[0]):g}"
            if isinstance(lr, Parameter)
            else type(lr).__name__
        )
        return f"learning_rate={lr_text}, parameters={len(self.parameters)}"


def _centralize(g: Any) -> Any:
    axes = tuple(range(1, g.ndim))
    return g - g.mean(axis=axes, keepdims=True)


def _dedup_rows(xp: Any, g: Any, shape: tuple[int, ...], dtype: Any) -> tuple[Any, Any]:
    """Unique sorted rows and their summed values (``(n_unique, row_size)``)."""
    idx = xp.asarray(_raw(g.indices)).reshape(-1).astype(xp.int64)
    row_size = 1
    for d in shape[1:]:
        row_size *= int(d)
    # the row size comes from the table, so a gradient with no rows (every id of a batch
    # out of range, or a shard that looked nothing up) is (0, row_size), not an error
    vals = xp.asarray(_raw(g.values)).reshape(idx.shape[0], row_size).astype(dtype)
    # already unique, sorted and inside (what a lookup's gradient gives): nothing to sort
    # or add up (np.unique and an argsort of the sorted rows took ~1 ms a step)
    inside = idx.size and int(idx[0]) >= 0 and int(idx[-1]) < shape[0]
    if inside and bool((idx[1:] > idx[:-1]).all()):
        return idx, vals
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= shape[0]):
        raise ValueError(
            f"row-sparse gradient: indices expected in [0, {shape[0]}), "
            f"got values from {int(idx.min())} to {int(idx.max())}"
        )
    rows, inverse = xp.unique(idx, return_inverse=True)
    if rows.shape[0] == idx.shape[0]:
        order = xp.argsort(idx)
        return idx[order], vals[order]
    summed = xp.zeros((rows.shape[0], vals.shape[1]), dtype)
    scatter_at(xp, "add", summed, inverse.reshape(-1), vals)
    return rows, summed
