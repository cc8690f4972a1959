"""gpusort under jax.jit against the eager call and JAX's own sort, in one process on one GPU
(issue 73's target: a call in jit within 10% of the eager call's time).

    python3 scripts/jax-bench.py [--reps 20] [--sizes 2^20,2^24,2^28]

Each case: float32 keys on the GPU, one warm-up, then the median wall time of --reps calls,
each waited for (block_until_ready). Methods: jax.jit(gpusort.jax.sort) (the XLA FFI call,
values and int32 positions), gpusort.sort on the JAX array (eager, the same values and int32
positions, through DLPack and PyTorch or CuPy), and jax.jit of jax.lax.sort_key_val with the
positions (JAX's own sort). Then top-k (k = 64 of rows of 2^17: LLM decoding's shape) against
jax.lax.top_k, and unique with counts (size = n) against jnp.unique, each under jit."""

import argparse
import os
import statistics
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def count(text):
    total = 0
    for term in text.split("+"):
        base, _, power = term.partition("^")
        total += int(base) ** int(power) if power else int(base)
    return total


def median_ms(call, x, reps):
    import jax

    jax.block_until_ready(call(x))
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        jax.block_until_ready(call(x))
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--sizes", default="2^20,2^24,2^28")
    args = parser.parse_args()
    import jax
    import jax.numpy as jnp

    import gpusort
    import gpusort.jax

    if not gpusort.jax.available():
        raise SystemExit("gpusort.jax: no XLA FFI handlers in this build")
    gpu = jax.devices("gpu")[0]
    jit_sort = jax.jit(gpusort.jax.sort)
    jax_sort = jax.jit(lambda v: jax.lax.sort_key_val(v, jnp.arange(v.shape[0], dtype=jnp.int32)))
    print(f"{gpu.device_kind}, median of {args.reps} calls (ms); ratio = other / jit(gpusort.jax.sort)")
    for n in (count(s) for s in args.sizes.split(",")):
        x = jax.device_put(jax.random.uniform(jax.random.key(n), (n,), jnp.float32), gpu)
        ours = median_ms(jit_sort, x, args.reps)
        eager = median_ms(lambda v: gpusort.sort(v, indices_dtype="int32"), x, args.reps)
        theirs = median_ms(jax_sort, x, args.reps)
        values, indices = jit_sort(x)
        ok = bool(jnp.all(values[1:] >= values[:-1])) and bool(jnp.all(x[indices] == values))
        print(f"n={n:>10d}  jit(gpusort.jax.sort) {ours:8.3f}  gpusort.sort eager {eager:8.3f} "
              f"({eager / ours:.2f}x)  jit(lax.sort_key_val) {theirs:8.3f} ({theirs / ours:.2f}x)  "
              f"checked={ok}", flush=True)
    rows, k = 64, 64
    x = jax.device_put(jax.random.uniform(jax.random.key(1), (rows, 2**17), jnp.float32), gpu)
    ours = median_ms(jax.jit(lambda v: gpusort.jax.topk(v, k)), x, args.reps)
    theirs = median_ms(jax.jit(lambda v: jax.lax.top_k(v, k)), x, args.reps)
    print(f"top-k {rows} x 2^17, k={k}: jit(gpusort.jax.topk) {ours:8.3f}  jit(lax.top_k) "
          f"{theirs:8.3f} ({theirs / ours:.2f}x)", flush=True)
    for n in (count(s) for s in args.sizes.split(",")):
        x = jax.device_put(jax.random.randint(jax.random.key(n), (n,), 0, n // 4 + 1), gpu)
        ours = median_ms(jax.jit(lambda v: gpusort.jax.unique(v, size=n, return_counts=True)),
                         x, args.reps)
        theirs = median_ms(jax.jit(lambda v: jnp.unique(v, size=n, return_counts=True)), x,
                           args.reps)
        print(f"unique n={n:>10d} int32 with counts: jit(gpusort.jax.unique) {ours:8.3f}  "
              f"jit(jnp.unique) {theirs:8.3f} ({theirs / ours:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
