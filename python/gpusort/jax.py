"""gpusort inside jax.jit (issue 73): sort, argsort, topk and unique as XLA FFI calls on JAX's
own stream, their workspace from XLA's allocator (or CUDA's stream-ordered one), without
PyTorch or CuPy.

    import jax, jax.numpy as jnp, gpusort.jax
    values, indices = jax.jit(gpusort.jax.sort)(jnp.asarray(x))
    values, indices = jax.jit(lambda v: gpusort.jax.topk(v, 8))(x)
    distinct, counts = jax.jit(lambda v: gpusort.jax.unique(v, size=100, return_counts=True))(x)

The handlers are in the compiled module where it was built against JAX's FFI headers (JAX
installed in the interpreter that built it: `pip install --no-build-isolation ./python`);
arrays on a GPU only. Eager calls on JAX arrays also go through gpusort.sort (DLPack)."""

import functools

_NANS = ("last", "first")


@functools.cache
def _registered():
    """Registers the module's handlers with JAX once; the error to raise if it cannot."""
    from ._extension import ext

    try:
        handlers = ext.jax_handlers()
    except (AttributeError, ImportError):  # built without the handlers, or no module at all
        return ("gpusort.jax: the compiled module has no XLA FFI handlers (it was built where "
                "JAX's FFI headers were not found; rebuild with JAX installed: "
                "pip install --no-build-isolation ./python)")
    try:
        import jax.ffi
    except ImportError:  # available() answers False where JAX is missing, rather than raising
        return "gpusort.jax: JAX (with jax.ffi) is not installed"

    for name, capsule in handlers.items():
        jax.ffi.register_ffi_target(name, capsule, platform="CUDA")
    return None


def available():
    """Whether gpusort.jax's calls can run: the handlers are built and registered."""
    return _registered() is None


def _ready():
    problem = _registered()
    if problem is not None:
        raise RuntimeError(problem)


def _rows_along(x, dim, verb, **flags):
    """The checks sort and topk share (the handlers there, bool flags, an axis to work along):
    x with dim moved last, and the indices' dtype (int64 with jax_enable_x64, else int32)."""
    import jax
    import jax.numpy as jnp

    _ready()
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise TypeError(f"{name}: must be a bool, got {type(flag).__name__}")
    x = jnp.asarray(x)
    if x.ndim == 0:
        raise ValueError(f"x: a 0-d array has nothing to {verb} along")
    return jnp.moveaxis(x, dim, -1), (jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)


def sort(x, dim=-1, descending=False, stable=False, *, nans="last"):
    """(values, indices) of x sorted along dim, like gpusort.sort and jax.lax.sort_key_val with
    the positions: traceable, so it runs inside jax.jit. indices are int64 with
    jax_enable_x64, else int32. NaNs after every number (nans="last", NumPy's) or before
    ("first"); stable=True keeps equal keys in their input order."""
    import jax
    import jax.numpy as jnp

    if nans not in _NANS:
        raise ValueError(f"nans: must be 'last' or 'first', got {nans!r}")
    moved, index_dtype = _rows_along(x, dim, "sort", descending=descending, stable=stable)
    # The handler sorts every row of the last axis, so under vmap it is the same call with the
    # batch axis in front ("broadcast_all"). Without a vmap_method, JAX's default is a
    # sequential loop of calls, deprecated (to become an error).
    call = jax.ffi.ffi_call(
        "gpusort_sort",
        (jax.ShapeDtypeStruct(moved.shape, moved.dtype),
         jax.ShapeDtypeStruct(moved.shape, index_dtype)),
        vmap_method="broadcast_all")
    values, indices = call(moved, descending=descending, stable=stable,
                           nans_first=nans == "first")
    return jnp.moveaxis(values, -1, dim), jnp.moveaxis(indices, -1, dim)


def argsort(x, dim=-1, descending=False, stable=False, *, nans="last"):
    """The indices that sort x along dim (sort's second result), traceable under jax.jit."""
    return sort(x, dim, descending, stable, nans=nans)[1]


def topk(x, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (largest=False: smallest) keys along dim, in order,
    like torch.topk and jax.lax.top_k; NaNs count as the largest keys. Traceable under jax.jit;
    indices as sort's. sorted=False is accepted: the k come in order either way."""
    import jax
    import jax.numpy as jnp

    moved, index_dtype = _rows_along(x, dim, "select", largest=largest, sorted=sorted)
    if not 0 <= k <= moved.shape[-1]:
        raise ValueError(f"k: must be between 0 and {moved.shape[-1]}, got {k}")
    shape = moved.shape[:-1] + (k,)
    call = jax.ffi.ffi_call(
        "gpusort_top_k",
        (jax.ShapeDtypeStruct(shape, moved.dtype), jax.ShapeDtypeStruct(shape, index_dtype)),
        vmap_method="broadcast_all")
    values, indices = call(moved, largest=largest)
    return jnp.moveaxis(values, -1, dim), jnp.moveaxis(indices, -1, dim)


# The key types the library's unique takes; jnp.unique does the others.
_UNIQUE_DTYPES = ("float32", "float64", "int32", "uint32", "int64", "uint64")


def unique(x, *, size, fill_value=None, return_counts=False):
    """The distinct keys of x (flattened) in order, as jnp.unique(x, size=size, ...): traceable
    under jax.jit because the result has a fixed length. The first `size` distinct keys; where
    there are fewer, the rest are fill_value (default: the smallest key, 0 for an empty x)
    with counts 0. Every NaN is one key (equal_nan=True), and -0.0 equals +0.0. With
    return_counts=True, (values, counts) with counts int64 under jax_enable_x64, else int32.
    Keys of other types than 32- and 64-bit ones go to jnp.unique."""
    import jax
    import jax.numpy as jnp

    _ready()
    if not isinstance(size, int) or size < 0:
        raise ValueError(f"size: must be an int of 0 or more, got {size!r}")
    x = jnp.ravel(jnp.asarray(x))
    if x.size == 0:  # no keys: `size` fills (jnp.unique gave 0 counts for an empty array)
        values = jnp.full((size,), 0 if fill_value is None else fill_value, x.dtype)
        counts = jnp.zeros((size,), jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)
        return (values, counts) if return_counts else values
    if x.dtype.name not in _UNIQUE_DTYPES:
        return jnp.unique(x, size=size, fill_value=fill_value, return_counts=return_counts)
    if jnp.issubdtype(x.dtype, jnp.floating):
        x = jnp.where(x == 0, jnp.zeros_like(x), x)  # -0.0 as +0.0, as jnp.unique compares
    call = jax.ffi.ffi_call(
        "gpusort_unique",
        (jax.ShapeDtypeStruct((size,), x.dtype),
         jax.ShapeDtypeStruct((size, 2), jnp.uint32),   # uint64 counts as pairs of uint32
         jax.ShapeDtypeStruct((2,), jnp.uint32)))      # the number of distinct keys, likewise
    values, count_words, found_words = call(x)
    count_dtype = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32
    # Little-endian words: the low one holds any count below 2^32 (int32 results need no more).
    if count_dtype == jnp.int64:
        found = found_words[0].astype(jnp.int64) | (found_words[1].astype(jnp.int64) << 32)
        counts = count_words[:, 0].astype(jnp.int64) | (count_words[:, 1].astype(jnp.int64) << 32)
    else:
        found = found_words[0].astype(jnp.int32)
        counts = count_words[:, 0].astype(jnp.int32)
    if size == 0:
        return (values, counts) if return_counts else values
    present = jnp.arange(size) < found
    if fill_value is None:  # the smallest key, as jnp.unique's default; 0 for no keys
        fill = jnp.where(found > 0, values[0], jnp.zeros((), x.dtype))
    else:
        fill = jnp.asarray(fill_value, x.dtype)
    values = jnp.where(present, values, fill)
    if not return_counts:
        return values
    return values, jnp.where(present, counts, jnp.zeros_like(counts))
