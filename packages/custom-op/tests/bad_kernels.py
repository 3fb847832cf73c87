"""Hybrid DSL functions that break one rule each (the marker comment ends the bad line)."""
# ruff: noqa: F401, F821, F841, B007, SIM105


def k_while(a):
    c = output_tensor(a.shape, a.dtype)
    i = 0
    while i < 3:  # BAD
        i = i + 1
    return c


def k_break(a):
    c = output_tensor(a.shape, a.dtype)
    for i in range(a.shape[0]):
        break  # BAD
    return c


def k_continue(a):
    c = output_tensor(a.shape, a.dtype)
    for i in range(a.shape[0]):
        continue  # BAD
    return c


def k_tensorised(a, b):
    c = output_tensor(a.shape, a.dtype)
    c[0] = a + b  # BAD
    return c


def k_unknown_call(a):
    c = output_tensor(a.shape, a.dtype)
    for i in range(a.shape[0]):
        c[i] = np.sin(a[i])  # BAD
    return c


def k_bad_function(a):
    c = output_tensor(a.shape, a.dtype)
    for i in range(a.shape[0]):
        c[i] = softplus(a[i])  # BAD
    return c


def k_redefine(a):
    c = output_tensor(a.shape, a.dtype)
    c = output_tensor(a.shape, a.dtype)  # BAD
    return c


def k_scalar_scope(a):
    c = output_tensor(a.shape, a.dtype)
    for i in range(a.shape[0]):
        t = a[i]
    c[0] = t  # BAD
    return c


def k_loop_var(a):
    c = output_tensor(a.shape, a.dtype)
    for i in range(a.shape[0]):
        i = 2  # BAD
    return c


def k_slice(a):
    c = output_tensor(a.shape, a.dtype)
    c[0] = a[1:3]  # BAD
    return c


def k_attribute(a):
    c = output_tensor(a.shape, a.dtype)
    c[0] = a.size  # BAD
    return c


def k_shape_index(a):
    c = output_tensor(a.shape, a.dtype)
    for i in range(2):
        c[i] = a.shape[i]  # BAD
    return c


def k_unreturned(a):
    c = output_tensor(a.shape, a.dtype)
    d = output_tensor(a.shape, a.dtype)
    return c  # BAD


def k_return_scalar(a):
    s = 1.0
    return s  # BAD


def k_pow(a):
    c = output_tensor(a.shape, a.dtype)
    c[0] = a[0] ** 2  # BAD
    return c


def k_iterator(a):
    c = output_tensor(a.shape, a.dtype)
    for i in [0, 1]:  # BAD
        c[i] = a[i]
    return c


def k_comprehension(a):
    c = output_tensor(a.shape, a.dtype)
    c[0] = sum([a[i] for i in range(3)])  # BAD
    return c


def k_try(a):
    c = output_tensor(a.shape, a.dtype)
    try:  # BAD
        c[0] = a[0]
    except IndexError:
        pass
    return c


def k_lambda(a):
    c = output_tensor(a.shape, a.dtype)
    c[0] = (lambda x: x)(a[0])  # BAD
    return c


def k_method(a):
    c = output_tensor(a.shape, a.dtype)
    c[0] = a.sum()  # BAD
    return c


def k_global(a):
    c = output_tensor(a.shape, a.dtype)
    c[0] = a[0] * SCALE  # BAD
    return c


def k_output_in_loop(a):
    for i in range(2):
        c = output_tensor(a.shape, a.dtype)  # BAD
    return a


def k_tuple_unpack(a):
    c = output_tensor(a.shape, a.dtype)
    x, y = 1.0, 2.0  # BAD
    return c


def k_early_return(a):
    c = output_tensor(a.shape, a.dtype)
    for i in range(2):
        return c  # BAD
    return c


def k_varargs(*a):  # BAD
    return a


def k_import(a):
    import math  # BAD

    return a


def k_print(a):
    print(a[0])  # BAD
    return a


def k_for_else(a):
    c = output_tensor(a.shape, a.dtype)
    for i in range(2):  # BAD
        c[i] = a[i]
    else:
        pass
    return c
