"""How gpusort talks to each array library: what an array is, where it lives, which stream
its library calls current, and how to allocate arrays of the caller's own type.

Outputs are allocated by the caller's library (torch in, torch out), through its own
allocator and on its current stream, so that gpusort never fights the library's memory
cache. Arrays reach the extension module as DLPack capsules made with the stream
handshake (``__dlpack__(stream=...)``) or as ``__cuda_array_interface__`` dicts.
"""

import sys

# Keys every entry point takes; the sorts (flat, rows, segments) and topk also take the narrow
# ones, which the library sorts at their own width.
KEY_DTYPES = ("int32", "uint32", "int64", "uint64", "float32", "float64")
NARROW_KEY_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "float16", "bfloat16")
SORT_KEY_DTYPES = KEY_DTYPES + NARROW_KEY_DTYPES


# numpy's typestr of each torch dtype the module reads (anything else is refused by type);
# NumPy has no bfloat16, which the module reads as "<bf2".
_TYPESTR = {"torch.int32": "<i4", "torch.uint32": "<u4", "torch.int64": "<i8",
            "torch.uint64": "<u8", "torch.float32": "<f4", "torch.float64": "<f8",
            "torch.bool": "|b1", "torch.int8": "|i1", "torch.uint8": "|u1",
            "torch.int16": "<i2", "torch.uint16": "<u2", "torch.float16": "<f2",
            "torch.bfloat16": "<bf2"}


def _dlpack_stream(stream):
    # DLPack: 1 names the legacy default stream, which CUDA calls 0 (and 0 is not allowed).
    return stream if stream else 1


class _Torch:
    name = "torch"

    def __init__(self, torch):
        self.torch = torch

    def owns(self, x):
        return isinstance(x, self.torch.Tensor)

    def dtype_name(self, x):
        return str(x.dtype).removeprefix("torch.")

    def shape(self, x):
        return tuple(x.shape)

    def on_device(self, x):
        return x.is_cuda

    def is_contiguous(self, x):
        return x.is_contiguous()

    def stream(self, x):
        # The raw handle as Triton reads it: torch.cuda.current_stream() costs about 8 us.
        raw = getattr(self.torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return raw(x.get_device())
        return self.torch.cuda.current_stream(x.device).cuda_stream

    def empty(self, like, shape, dtype):
        return self.torch.empty(shape, dtype=getattr(self.torch, dtype), device=like.device)

    def copy(self, x):
        return x.detach().clone(memory_format=self.torch.contiguous_format)

    def arange(self, like, n, dtype):
        return self.torch.arange(n, dtype=getattr(self.torch, dtype), device=like.device)

    def tile_rows(self, row, rows):
        return row.expand(rows, row.shape[0]).contiguous()

    def moveaxis(self, x, source, destination):
        return x.movedim(source, destination)

    def contiguous(self, x):
        return x.contiguous()

    def assign(self, destination, source):
        with self.torch.no_grad():  # gpusort.sort_ is not differentiable
            destination.copy_(source)

    def astype(self, x, dtype):
        return x.to(getattr(self.torch, dtype))

    def view(self, x, dtype):
        return x.view(getattr(self.torch, dtype))

    def take_along(self, x, indices, axis):
        return self.torch.gather(x, axis, indices.long())

    def one_nan(self, x):
        """A copy of the float array x with every NaN the same NaN."""
        return x.masked_fill(x.isnan(), float("nan"))

    def ones(self, like, shape, dtype):
        return self.torch.ones(shape, dtype=getattr(self.torch, dtype), device=like.device)

    def concat(self, arrays, axis):
        return self.torch.cat(arrays, dim=axis)

    def handle(self, x, stream):
        """(pointer, typestr, count, device) of a contiguous CUDA tensor, else a
        __cuda_array_interface__ dict with its strides (which the module refuses). No stream:
        the work runs on `stream`, torch's current stream, so there is nothing to wait for.
        torch's __dlpack__(stream=...) did the same at about 23 us a call on the H100 host (it
        looks the current stream up again), and a dict costs several microseconds to read;
        the module holds the handle, and so the tensor, until the work is enqueued."""
        if not x.is_cuda:
            return x.detach().__dlpack__()
        typestr = _TYPESTR.get(str(x.dtype)) or "|V%d" % x.element_size()
        if x.is_contiguous():
            return (x.data_ptr(), typestr, x.numel(), x.get_device(), x)  # x: kept alive
        item = x.element_size()
        return {
            "data": (x.data_ptr(), False),
            "shape": tuple(x.shape),
            "strides": tuple(step * item for step in x.stride()),
            "typestr": typestr,
            "version": 3,
        }

    def to_numpy(self, x):
        return x.detach().numpy()

    def from_numpy(self, a):
        return self.torch.from_numpy(a)


class _NdArrays:
    """What CuPy and NumPy arrays share: the ndarray interface, and functions of the same
    name in their modules."""

    def __init__(self, module):
        self.module = module

    def owns(self, x):
        return isinstance(x, self.module.ndarray)

    def dtype_name(self, x):
        return x.dtype.name

    def shape(self, x):
        return tuple(x.shape)

    def is_contiguous(self, x):
        return x.flags.c_contiguous

    def tile_rows(self, row, rows):
        return self.module.broadcast_to(row, (rows, row.shape[0])).copy()

    def moveaxis(self, x, source, destination):
        return self.module.moveaxis(x, source, destination)

    def contiguous(self, x):
        return self.module.ascontiguousarray(x)

    def assign(self, destination, source):
        destination[...] = source

    def astype(self, x, dtype):
        return x.astype(dtype, copy=False)

    def view(self, x, dtype):
        return x.view(dtype)

    def take_along(self, x, indices, axis):
        return self.module.take_along_axis(x, indices, axis)

    def one_nan(self, x):
        """A copy of the float array x with every NaN the same NaN."""
        return self.module.where(self.module.isnan(x), self.module.array(float("nan"), x.dtype), x)

    def ones(self, like, shape, dtype):
        if self.name == "cupy":
            with like.device:
                return self.module.ones(shape, dtype=dtype)
        return self.module.ones(shape, dtype=dtype)

    def concat(self, arrays, axis):
        return self.module.concatenate(arrays, axis=axis)


class _CuPy(_NdArrays):
    name = "cupy"

    def on_device(self, x):
        return True

    def stream(self, x):
        with x.device:
            return self.module.cuda.get_current_stream().ptr

    def empty(self, like, shape, dtype):
        with like.device:
            return self.module.empty(shape, dtype=dtype)

    def copy(self, x):
        return x.copy(order="C")

    def arange(self, like, n, dtype):
        with like.device:
            return self.module.arange(n, dtype=dtype)

    def handle(self, x, stream):
        return x.__dlpack__(stream=_dlpack_stream(stream))


class _NumPy(_NdArrays):
    name = "numpy"

    def on_device(self, x):
        return False

    def empty(self, like, shape, dtype):
        return self.module.empty(shape, dtype=dtype)

    def copy(self, x):
        return self.module.array(x, order="C", copy=True)

    def arange(self, like, n, dtype):
        return self.module.arange(n, dtype=dtype)


class _Foreign:
    """Any other device array with __dlpack__ or __cuda_array_interface__: sorted in place
    (sort_ with an algorithm that needs no workspace) on the legacy default stream. Results
    of their own type would need their library's allocator, which gpusort does not know."""

    name = "foreign"

    def owns(self, x):
        return hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__")

    def _interface(self, x):
        return getattr(x, "__cuda_array_interface__", None)

    def _describe(self, x):
        from ._extension import ext as _ext  # what the module itself reads from the array

        return _ext.describe(self.handle(x, 0))

    def dtype_name(self, x):
        name = self._describe(x)["type"]
        return name if name in SORT_KEY_DTYPES else "of another type"

    def shape(self, x):
        return tuple(self._describe(x)["shape"])

    def on_device(self, x):
        if self._interface(x) is not None:
            return True
        device_type, _ = x.__dlpack_device__()
        return device_type in (2, 13)  # kDLCUDA, kDLCUDAManaged

    def is_contiguous(self, x):
        return True  # checked by the extension module from the strides it is given

    def stream(self, x):
        return 0

    def _unsupported(self, *args, **kwargs):
        raise TypeError(
            "x: gpusort returns new arrays only for PyTorch, CuPy and NumPy arrays; "
            "arrays of other libraries can be sorted in place with gpusort.sort_"
        )

    empty = copy = arange = tile_rows = astype = moveaxis = contiguous = assign = _unsupported

    def handle(self, x, stream):
        iface = self._interface(x)
        if iface is not None:
            return dict(iface)
        return x.__dlpack__(stream=_dlpack_stream(stream))


def cupy_device(x):
    """The device of the CuPy array x (a context that makes it current), else None."""
    cupy = sys.modules.get("cupy")
    return x.device if cupy is not None and isinstance(x, cupy.ndarray) else None


def is_jax(x):
    return type(x).__module__.partition(".")[0] in ("jax", "jaxlib")


def lend_jax(x, argument):
    """A zero-copy PyTorch (else CuPy) view of the JAX array x, through DLPack: JAX arrays
    are immutable and JAX lends no allocator, so gpusort sorts into the other library's
    arrays and hands them back with jax_results."""
    for name in ("torch", "cupy"):
        try:
            library = __import__(name)
        except ImportError:
            continue
        return library.from_dlpack(x)
    raise TypeError(f"{argument}: sorting JAX arrays needs PyTorch or CuPy installed (gpusort "
                    "allocates the results with one of them and hands them to JAX through DLPack)")


def jax_results(arrays):
    """Results of a sort of lent JAX arrays as new JAX arrays, without copies."""
    import jax.dlpack

    return tuple(jax.dlpack.from_dlpack(a) for a in arrays)


_ADAPTERS = {}  # type(x) -> its adapter: one lookup per call instead of probing libraries


def namespace_of(x, argument):
    """The adapter for x's library, or TypeError naming the argument."""
    xp = _ADAPTERS.get(type(x))
    if xp is not None:
        return xp
    candidates = []
    if "torch" in sys.modules:
        candidates.append(_Torch(sys.modules["torch"]))
    if "cupy" in sys.modules:
        candidates.append(_CuPy(sys.modules["cupy"]))
    if "numpy" in sys.modules:
        candidates.append(_NumPy(sys.modules["numpy"]))
    for xp in candidates:
        if xp.owns(x):
            if xp.name == "numpy" and isinstance(x, xp.module.ma.MaskedArray):
                # Refused here, never cached: views and copies made later would drop the mask.
                raise TypeError(f"{argument}: masked arrays are not supported; sort "
                                f"{argument}.compressed() or {argument}.filled(value) instead")
            _ADAPTERS[type(x)] = xp
            return xp
    foreign = _Foreign()
    if foreign.owns(x):
        return foreign  # not cached: such objects are checked one by one
    raise TypeError(
        f"{argument}: expected an array (PyTorch tensor, CuPy or NumPy array, or any object "
        f"with __dlpack__ or __cuda_array_interface__), got {type(x).__name__}"
    )
