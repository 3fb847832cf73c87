"""Wide&Deep's loss, train step and predictor (the model zoo's ``NetWithLossClass``,
``TrainStepWrap`` and ``PredictWithSigmoid``).

``TrainStepWrap`` splits the parameters by name: those with ``wide`` in their name (if any)
go to FTRL (lr 5e-2, l1 = l2 = 1e-8, initial_accum 1.0), the rest to Adam (lr 3.5e-4, eps 1e-8;
LazyAdam for a sparse model), both with ``loss_scale = sens = 1024``. MindSpore takes two
gradients, of the wide loss w.r.t. the wide parameters and of the deep loss w.r.t. the deep
ones; the deep loss is the wide loss plus an L2 term of the deep table alone, so one backward
pass of the deep loss gives both sets exactly, and that is what runs here.
"""

from __future__ import annotations

from typing import Any

from sporeling.core import ParameterTuple, Tensor, nn, ops, value_and_grad
from sporeling.core.nn.optim import FTRL, Adam, LazyAdam

__all__ = ["NetWithLossClass", "TrainStepWrap", "PredictWithSigmoid", "split_wide_deep"]


class NetWithLossClass(nn.Cell):
    """``(wide_loss, deep_loss)``: the mean sigmoid cross entropy of the logits, and for a
    dense model the same plus ``l2_coef * sum(table^2) / 2`` of the deep table (a sparse model
    adds nothing, as in MindSpore: its gradient would touch every row)."""

    def __init__(self, network: nn.Cell, l2_coef: float = 8e-5) -> None:
        super().__init__(auto_prefix=False)
        self.network = network
        self.l2_coef = float(l2_coef)
        self.sparse = bool(getattr(network, "sparse", True))

    def construct(self, batch_ids: Tensor, batch_wts: Tensor, label: Tensor) -> Any:
        predict, embedding_table = self.network(batch_ids, batch_wts)
        log_loss = ops.binary_cross_entropy_with_logits(predict, label, reduction="none")
        wide_loss = ops.reduce_mean(log_loss)
        if self.sparse:
            return wide_loss, wide_loss
        l2_loss_v = ops.reduce_sum(ops.square(embedding_table)) / 2
        return wide_loss, wide_loss + self.l2_coef * l2_loss_v


def split_wide_deep(params: Any) -> tuple[list[Any], list[Any]]:
    """The parameters with ``wide`` in their name, and the others."""
    params = list(params)
    return [p for p in params if "wide" in p.name], [p for p in params if "wide" not in p.name]


class TrainStepWrap(nn.Cell):
    """One step of FTRL on the wide and Adam/LazyAdam on the deep parameters; returns
    ``(wide_loss, deep_loss)``."""

    def __init__(
        self,
        network: NetWithLossClass,
        sens: float = 1024.0,
        ftrl_lr: float = 5e-2,
        adam_lr: float = 3.5e-4,
    ) -> None:
        super().__init__(auto_prefix=False)
        self.network = network
        self.network.set_train()
        weights_w, weights_d = split_wide_deep(network.trainable_params())
        if not weights_d:
            raise ValueError(
                "TrainStepWrap: the network needs parameters without 'wide' in their name "
                f"(the deep part); got only {[p.name for p in weights_w]}"
            )
        self.weights_w = ParameterTuple(weights_w)
        self.weights_d = ParameterTuple(weights_d)
        self.sens = float(sens)
        self.optimizer_w = None  # a model without a wide part (DCN-v2) has no FTRL
        if weights_w:
            self.optimizer_w = FTRL(
                self.weights_w, learning_rate=ftrl_lr, l1=1e-8, l2=1e-8, initial_accum=1.0,
                loss_scale=self.sens,
            )  # fmt: skip
        deep_opt = LazyAdam if network.sparse else Adam
        self.optimizer_d = deep_opt(self.weights_d, learning_rate=adam_lr, eps=1e-8,
                                    loss_scale=self.sens)  # fmt: skip
        from .cache import attach_optimizer

        if self.optimizer_w is not None:  # cached tables move their moments too
            attach_optimizer(network, self.optimizer_w)
        attach_optimizer(network, self.optimizer_d)
        self._weights = [*self.weights_w, *self.weights_d]
        self._n_wide = len(weights_w)

        def deep_loss(ids: Tensor, wts: Tensor, label: Tensor) -> Any:
            loss_w, loss_d = self.network(ids, wts, label)
            # the sensitivity (loss scale 1024) enters at the top of the backward pass, as
            # MindSpore's sens_param does: one scalar product instead of scaling every
            # gradient afterwards (a pass over each dense gradient and row-gradient block)
            return loss_d * self.sens, loss_d, loss_w

        self._grad = value_and_grad(deep_loss, None, self._weights, has_aux=True)

    def construct(self, batch_ids: Tensor, batch_wts: Tensor, label: Tensor) -> Any:
        (_, loss_d, loss_w), grads = self._grad(batch_ids, batch_wts, label)
        if self.optimizer_w is not None:
            self.optimizer_w(grads[: self._n_wide])
        self.optimizer_d(grads[self._n_wide :])
        return loss_w, loss_d


class PredictWithSigmoid(nn.Cell):
    """``(logits, sigmoid(logits), label)`` for :class:`~sporeling.recommender.AUCMetric`."""

    def __init__(self, network: nn.Cell) -> None:
        super().__init__(auto_prefix=False)
        self.network = network

    def construct(self, batch_ids: Tensor, batch_wts: Tensor, labels: Tensor) -> Any:
        logits, _ = self.network(batch_ids, batch_wts)
        return logits, ops.sigmoid(logits), labels
