"""Arrays on another GPU than the current one are sorted on their own GPU and stream (issue
44): PyTorch tensors, objects with only __cuda_array_interface__ (whose device the module
finds from the pointer), and arrays of two GPUs in one call refused. Skipped with fewer than
two GPUs (scripts/gpu-check.sh --multi runs it on a 2-GPU host)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if torch.cuda.device_count() < 2:
    pytest.skip("needs two GPUs", allow_module_level=True)

import gpusort  # noqa: E402
from reference import check_sorted, random_keys  # noqa: E402


class Interface:
    def __init__(self, tensor):
        self.__cuda_array_interface__ = tensor.__cuda_array_interface__


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_tensor_on_cuda1_with_cuda0_current(dtype, rng):
    x_host = random_keys(dtype, 1 << 20, rng)
    with torch.cuda.device(0):
        x = torch.from_numpy(x_host).to("cuda:1")
        values, indices = gpusort.sort(x)
        top = gpusort.topk(x, 100)
        assert torch.cuda.current_device() == 0
    assert values.device == x.device and indices.device == x.device
    check_sorted(x_host, values.cpu().numpy(), indices.cpu().numpy())
    assert np.array_equal(top.values.cpu().numpy(), np.sort(x_host)[::-1][:100])
    with torch.cuda.device(0):
        gpusort.sort_(x)
    assert np.array_equal(x.cpu().numpy(), np.sort(x_host))


def test_interface_object_on_cuda1_sorted_there(rng):
    x_host = random_keys("float64", 300_000, rng)
    x = torch.from_numpy(x_host).to("cuda:1")
    torch.cuda.synchronize(1)
    with torch.cuda.device(0):
        gpusort.sort_(Interface(x))  # default algorithm: workspace on cuda:1
        assert torch.cuda.current_device() == 0
    torch.cuda.synchronize(1)
    assert np.array_equal(x.cpu().numpy(), np.sort(x_host))


def test_arrays_of_two_gpus_are_refused(rng):
    x = torch.rand(1000, device="cuda:0")
    offsets = torch.tensor([0, 500, 1000], device="cuda:1")
    before = x.clone()
    with pytest.raises(ValueError, match="different devices"):
        gpusort.sort_segmented(x, offsets)
    assert torch.equal(x, before)
