"""Metrics against plain NumPy references (no scikit-learn)."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.core import Tensor
from sporeling.core.train import metrics as M


def _data(seed=0, n=50, c=4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, c)), rng.integers(0, c, size=n)


def _per_class(pred, y, c):
    tp = np.array([np.sum((pred == k) & (y == k)) for k in range(c)], float)
    predicted = np.array([np.sum(pred == k) for k in range(c)], float)
    actual = np.array([np.sum(y == k) for k in range(c)], float)
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = np.nan_to_num(tp / predicted)
        rec = np.nan_to_num(tp / actual)
        f1 = np.nan_to_num(2 * tp / (predicted + actual))
    return prec, rec, f1


def test_accuracy_in_batches_with_tensor_and_onehot_labels():
    logits, y = _data()
    m = M.Accuracy()
    m.update(Tensor(logits[:20]), Tensor(y[:20]))
    m.update(logits[20:], np.eye(4)[y[20:]])  # one-hot labels
    assert m.eval() == pytest.approx(np.mean(logits.argmax(1) == y))


def test_accuracy_multilabel():
    pred = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 1]])
    y = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1]])
    assert M.Accuracy("multilabel")(pred, y) == pytest.approx(2 / 3)


def test_accuracy_errors():
    with pytest.raises(ValueError, match="eval_type"):
        M.Accuracy("regression")
    with pytest.raises(RuntimeError, match="no samples"):
        M.Accuracy().eval()
    with pytest.raises(ValueError, match="expected 2 inputs"):
        M.Accuracy().update(np.zeros((2, 2)))
    m = M.Accuracy()
    m.update(np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(ValueError, match="3 classes"):
        m.update(np.zeros((2, 4)), np.zeros(2))
    with pytest.raises(TypeError, match="Tensors, lists or numpy"):
        M.Accuracy().update("a", "b")


def test_precision_recall_f1_against_counts():
    logits, y = _data(1, 200, 5)
    prec, rec, f1 = _per_class(logits.argmax(1), y, 5)
    for cls, ref in ((M.Precision, prec), (M.Recall, rec)):
        m = cls()
        m.update(logits[:100], y[:100])
        m.update(logits[100:], y[100:])
        np.testing.assert_allclose(m.eval(), ref, rtol=1e-12)
        assert m.eval(average=True) == pytest.approx(ref.mean())
    f = M.F1()
    f.update(logits, y)
    np.testing.assert_allclose(f.eval(), f1, rtol=1e-12)
    assert f.eval(average=True) == pytest.approx(f1.mean())
    fb = M.Fbeta(2.0)(logits, y)
    tp = prec * 0  # recompute F2 from counts
    pred = logits.argmax(1)
    tp = np.array([np.sum((pred == k) & (y == k)) for k in range(5)], float)
    ref_f2 = 5 * tp / (4 * np.bincount(y, minlength=5) + np.bincount(pred, minlength=5))
    np.testing.assert_allclose(fb, ref_f2, rtol=1e-12)
    with pytest.raises(ValueError, match="beta"):
        M.Fbeta(0)
    with pytest.raises(TypeError, match="average"):
        f.eval(average=1)
    with pytest.raises(ValueError, match="labels must lie"):
        M.Precision()(logits, y + 5)


def test_precision_multilabel_per_sample():
    pred = np.array([[1, 0, 1], [0, 1, 1]])
    y = np.array([[1, 0, 0], [0, 1, 1]])
    np.testing.assert_allclose(M.Precision("multilabel")(pred, y), [0.5, 1.0])
    np.testing.assert_allclose(M.Recall("multilabel")(pred, y), [1.0, 1.0])


def test_mae_mse_loss():
    rng = np.random.default_rng(2)
    p, t = rng.normal(size=(30, 3)), rng.normal(size=(30, 3))
    mae, mse = M.MAE(), M.MSE()
    for s in (slice(0, 10), slice(10, 30)):
        mae.update(Tensor(p[s]), t[s])
        mse.update(p[s], t[s])
    # MindSpore divides the summed error by the number of samples (first axis)
    assert mae.eval() == pytest.approx(np.abs(p - t).sum() / 30)
    assert mse.eval() == pytest.approx(((p - t) ** 2).sum() / 30)
    loss = M.Loss()
    loss.update(Tensor(np.float32(2.0)))
    loss.update(np.array([1.0, 3.0, 5.0]))
    assert loss.eval() == pytest.approx(2.5)
    with pytest.raises(ValueError, match="scalar or 1-d"):
        loss.update(np.zeros((2, 2)))
    with pytest.raises(RuntimeError):
        M.MAE().eval()


def test_top_k_against_reference():
    logits, y = _data(3, 80, 10)
    for k in (1, 3, 5):
        ref = np.mean([y[i] in np.argsort(-logits[i])[:k] for i in range(80)])
        assert M.TopKCategoricalAccuracy(k)(logits, y) == pytest.approx(ref)
    assert M.Top1CategoricalAccuracy()(logits, y) == pytest.approx(np.mean(logits.argmax(1) == y))
    assert M.Top5CategoricalAccuracy().k == 5
    with pytest.raises(ValueError, match="at least 1"):
        M.TopKCategoricalAccuracy(0)
    with pytest.raises(TypeError):
        M.TopKCategoricalAccuracy(2.0)


def _mann_whitney_auc(scores, labels):
    """AUC = P(score_pos > score_neg) + 0.5 P(tie), from average ranks."""
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    s = scores[order]
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


@pytest.mark.parametrize("ties", [False, True])
def test_roc_auc_against_mann_whitney(ties):
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, size=120)
    scores = rng.normal(size=120) + labels
    if ties:
        scores = np.round(scores, 1)
    m = M.ROCAUC()
    m.update(Tensor(scores[:60]), labels[:60])
    m.update(scores[60:], labels[60:])
    assert m.eval() == pytest.approx(_mann_whitney_auc(scores, labels), rel=1e-12)
    fpr, tpr, thr = M.ROC(pos_label=1)(scores, labels)
    assert fpr[0] == 0 and tpr[0] == 0 and fpr[-1] == 1 and tpr[-1] == 1
    assert np.all(np.diff(thr) < 0)
    assert M.auc(fpr, tpr) == pytest.approx(_mann_whitney_auc(scores, labels))
    # two-column probabilities: the second column is the positive class
    two = np.stack([1 - scores, scores], axis=1)
    assert M.ROCAUC()(two, labels) == pytest.approx(_mann_whitney_auc(scores, labels))


def test_roc_multiclass_one_vs_rest():
    logits, y = _data(5, 60, 3)
    fpr, tpr, _ = M.ROC(class_num=3)(logits, y)
    for c in range(3):
        ref = _mann_whitney_auc(logits[:, c], (y == c).astype(int))
        assert M.auc(fpr[c], tpr[c]) == pytest.approx(ref)
    with pytest.raises(ValueError, match="pos_label"):
        M.ROC(pos_label=1)(logits, y)
    with pytest.raises(ValueError, match="class_num"):
        M.ROC(class_num=4)(logits, y)
    with pytest.raises(ValueError, match="no negative"):
        M.ROC()(np.array([0.1, 0.2]), np.array([1, 1]))
    with pytest.raises(RuntimeError):
        M.ROC().eval()


def test_auc_function():
    x, y = np.array([0.0, 0.5, 1.0]), np.array([0.0, 1.0, 1.0])
    assert M.auc(x, y) == pytest.approx(0.75)
    assert M.auc(x[::-1], y[::-1]) == pytest.approx(0.75)  # decreasing x
    with pytest.raises(ValueError, match="monotonic"):
        M.auc(np.array([0.0, 1.0, 0.5]), y)
    assert M.auc(np.array([0.0, 1.0, 0.5]), np.array([0.0, 1.0, 1.0]), reorder=True) == 0.75
    with pytest.raises(TypeError):
        M.auc([0, 1], [0, 1])
    with pytest.raises(ValueError, match="2 points"):
        M.auc(np.array([0.0]), np.array([1.0]))


def test_confusion_matrix():
    logits, y = _data(6, 40, 3)
    pred = logits.argmax(1)
    ref = np.zeros((3, 3))
    for t, p in zip(y, pred):
        ref[t, p] += 1
    cm = M.ConfusionMatrix(3)
    cm.update(logits, y)
    np.testing.assert_array_equal(cm.eval(), ref)
    np.testing.assert_allclose(
        M.ConfusionMatrix(3, normalize="target")(logits, y), ref / ref.sum(1, keepdims=True)
    )
    np.testing.assert_allclose(M.ConfusionMatrix(3, normalize="all")(logits, y), ref / ref.sum())
    binary = M.ConfusionMatrix(2)(np.array([0.2, 0.7, 0.9]), np.array([0, 0, 1]))
    np.testing.assert_array_equal(binary, [[1, 1], [0, 1]])
    with pytest.raises(ValueError, match="normalize"):
        M.ConfusionMatrix(3, normalize="rows")


def test_factory_and_indexes():
    assert {"accuracy", "acc", "loss", "F1", "auc", "mae", "mse", "precision"} <= set(M.names())
    assert isinstance(M.get_metric_fn("top_k_categorical_accuracy", k=2), M.TopKCategoricalAccuracy)
    with pytest.raises(KeyError, match="unknown metric"):
        M.get_metric_fn("nope")
    got = M.get_metrics({"acc", "loss"})
    assert isinstance(got["acc"], M.Accuracy) and isinstance(got["loss"], M.Loss)
    assert M.get_metrics(None) is None
    with pytest.raises(TypeError):
        M.get_metrics(["acc"])
    with pytest.raises(TypeError):
        M.get_metrics({"acc": "accuracy"})
    m = M.Accuracy().set_indexes([1, 2])
    m.update("ignored", np.array([[0.1, 0.9]]), np.array([1]))
    assert m.eval() == 1.0
    with pytest.raises(ValueError, match="list of ints"):
        M.Accuracy().set_indexes((1, 2))
