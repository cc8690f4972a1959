"""gpusort inside jax.jit (issue 73): the sort as an XLA FFI call on JAX's own stream, its
workspace from XLA's allocator, without PyTorch or CuPy.

    import jax, jax.numpy as jnp, gpusort.jax
    values, indices = jax.jit(gpusort.jax.sort)(jnp.asarray(x))

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


def sort(x, dim=-1, descending=False, stable=False, *, nans="last"):
    """(values, indices) of x sorted along dim, like gpusort.sort and jax.lax.sort_key_val with
    the positions: traceable, so it runs inside jax.jit. indices are int64 with
    jax_enable_x64, else int32. NaNs after every number (nans="last", NumPy's) or before
    ("first"); stable=True keeps equal keys in their input order."""
    import jax
    import jax.numpy as jnp

    problem = _registered()
    if problem is not None:
        raise RuntimeError(problem)
    if nans not in _NANS:
        raise ValueError(f"nans: must be 'last' or 'first', got {nans!r}")
    for name, flag in (("descending", descending), ("stable", stable)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name}: must be a bool, got {type(flag).__name__}")
    x = jnp.asarray(x)
    if x.ndim == 0:
        raise ValueError("x: a 0-d array has nothing to sort along")
    moved = jnp.moveaxis(x, dim, -1)
    index_dtype = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32
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
