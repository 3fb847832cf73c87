"""xp-generic (NumPy/CuPy) update rules over flat buffers: the GPU path and the reference.

Every function mirrors one kernel of :mod:`sporeling.core.kernels.cpu.optim` with the same
arguments, except that the per-parameter ``lr``/``wd`` arrays arrive expanded to one value
per element (``lr_e``/``wd_e``, float64) so each rule is a few whole-buffer array expressions.
Buffers are updated in place (``out=``/slice assignment), never rebound.
"""

from __future__ import annotations

__all__ = [
    "sgd",
    "momentum",
    "adam",
    "adam_weight_decay",
    "adamw",
    "lamb",
    "adagrad",
    "rmsprop",
    "ftrl",
    "lazy_adam_rows",
    "ftrl_rows",
]


def sgd(xp, p, g, accum, stat, off, lr_e, wd_e, inv_scale, momentum, dampening, nesterov):
    gi = g * inv_scale + wd_e * p
    if momentum > 0.0:
        first = stat > 0
        a = xp.where(first, gi, accum * momentum + (1.0 - dampening) * gi)
        accum[...] = a
        stat[first] = 0
        gi = gi + a * momentum if nesterov else a
    p[...] = p - lr_e * gi


def momentum(xp, p, g, moments, off, lr_e, wd_e, inv_scale, mom, nesterov):
    gi = g * inv_scale + wd_e * p
    a = moments * mom + gi
    moments[...] = a
    p[...] = p - lr_e * (gi + a * mom if nesterov else a)


def adam(xp, p, g, m, v, off, act_e, lr_e, wd_e, inv_scale, beta1, beta2, eps, nesterov):
    # act_e: None, or a boolean mask of the elements to update (LazyAdam's dense part).
    gi = g * inv_scale + wd_e * p
    mi = m + (1.0 - beta1) * (gi - m)
    vi = v + (1.0 - beta2) * (gi * gi - v)
    num = mi * beta1 + (1.0 - beta1) * gi if nesterov else mi
    pi = p - lr_e * num / (xp.sqrt(vi) + eps)
    if act_e is not None:
        mi, vi, pi = (xp.where(act_e, new, old) for new, old in ((mi, m), (vi, v), (pi, p)))
    m[...] = mi
    v[...] = vi
    p[...] = pi


def adam_weight_decay(xp, p, g, m, v, off, lr_e, wd_e, beta1, beta2, eps):
    mi = beta1 * m + (1.0 - beta1) * g
    vi = beta2 * v + (1.0 - beta2) * g * g
    m[...] = mi
    v[...] = vi
    p[...] = p - lr_e * (mi / (xp.sqrt(vi) + eps) + wd_e * p)


def adamw(xp, p, g, m, v, off, lr_e, wd_e, beta1, beta2, eps, bc1, bc2):
    mi = beta1 * m + (1.0 - beta1) * g
    vi = beta2 * v + (1.0 - beta2) * g * g
    m[...] = mi
    v[...] = vi
    p[...] = p * (1.0 - lr_e * wd_e) - (lr_e / bc1) * mi / (xp.sqrt(vi) / bc2**0.5 + eps)


def lamb(xp, p, g, m, v, off, lr_e, wd_e, beta1, beta2, eps, bc1, bc2):
    mi = beta1 * m + (1.0 - beta1) * g
    vi = beta2 * v + (1.0 - beta2) * g * g
    m[...] = mi
    v[...] = vi
    u = (mi / bc1) / (xp.sqrt(vi / bc2) + eps) + wd_e * p
    ratio = xp.ones_like(lr_e)
    for s in range(len(off) - 1):  # layer-wise norms (a segmented reduction)
        a, b = int(off[s]), int(off[s + 1])
        w_norm = float(xp.sqrt(xp.sum(p[a:b].astype(xp.float64) ** 2)))
        u_norm = float(xp.sqrt(xp.sum(u[a:b].astype(xp.float64) ** 2)))
        if w_norm > 0.0 and u_norm > 0.0:
            ratio[a:b] = w_norm / u_norm
    p[...] = p - lr_e * ratio * u


def adagrad(xp, p, g, accum, off, lr_e, wd_e, inv_scale, update_slots):
    gi = g * inv_scale + wd_e * p
    if update_slots:
        accum[...] = accum + gi * gi
    p[...] = p - lr_e * gi / xp.sqrt(accum.astype(xp.float64))


def rmsprop(xp, p, g, ms, mom, mg, off, lr_e, wd_e, inv_scale, decay, momentum_, eps, centered):
    gi = g * inv_scale + wd_e * p
    msi = ms + (1.0 - decay) * (gi * gi - ms)
    ms[...] = msi
    if centered:
        mgi = mg + (1.0 - decay) * (gi - mg)
        mg[...] = mgi
        denom = msi - mgi * mgi + eps
    else:
        denom = msi + eps
    mo = momentum_ * mom + lr_e * gi / xp.sqrt(denom)
    mom[...] = mo
    p[...] = p - mo


def _ftrl(xp, var, gi, accum, linear, lr, l1, l2, lr_power):
    a_new = accum + gi * gi
    pow_new = a_new ** (-lr_power)
    pow_old = accum ** (-lr_power)
    lin = linear + gi - (pow_new - pow_old) / lr * var
    quad = pow_new / lr + 2.0 * l2
    new_var = xp.where(xp.abs(lin) > l1, (xp.sign(lin) * l1 - lin) / quad, 0.0)
    return new_var, a_new, lin


def ftrl(xp, p, g, accum, linear, off, act_e, lr_e, wd_e, inv_scale, l1, l2, lr_power):
    gi = g * inv_scale + wd_e * p
    var, a, lin = _ftrl(xp, p.astype(xp.float64), gi, accum, linear, lr_e, l1, l2, lr_power)
    if act_e is not None:
        var, a, lin = (xp.where(act_e, n, o) for n, o in ((var, p), (a, accum), (lin, linear)))
    p[...] = var
    accum[...] = a
    linear[...] = lin


def lazy_adam_rows(xp, p, m, v, rows, vals, lr, wd, inv_scale, beta1, beta2, eps, nesterov):
    pr = p[rows].astype(xp.float64)
    gi = vals * inv_scale + wd * pr
    mi = m[rows] + (1.0 - beta1) * (gi - m[rows])
    vi = v[rows] + (1.0 - beta2) * (gi * gi - v[rows])
    m[rows] = mi
    v[rows] = vi
    num = mi * beta1 + (1.0 - beta1) * gi if nesterov else mi
    p[rows] = pr - lr * num / (xp.sqrt(vi) + eps)


def ftrl_rows(xp, p, accum, linear, rows, vals, lr, wd, inv_scale, l1, l2, lr_power):
    pr = p[rows].astype(xp.float64)
    gi = vals * inv_scale + wd * pr
    var, a, lin = _ftrl(xp, pr, gi, accum[rows], linear[rows], lr, l1, l2, lr_power)
    p[rows] = var
    accum[rows] = a
    linear[rows] = lin
