"""A known distribution for the failure the kernels were tried on: a level (amp) measured once. Run from the
repository root: PYTHONPATH=$PWD .venv/bin/python docs/results/search/tried-2026-11-30/harness/known.py [draws]

Log throughput of precision x batch (1..64) x instances (1, 2, 4): fp16 and amp follow one curve (steep in batch),
fp32 and tf32 another (flat), each row with 2% noise. Every draw measures 12 configurations of fp32 / tf32 / fp16
at random and amp once, at a random position; the surrogate (with each kernel variant) is fitted as the search
fits it (surrogate.fit: the cross-validated widening included), and every unmeasured amp configuration is scored:
is its true mean inside the 95% interval, beyond the better (upper) end, or beyond the lower one; and how far
above the predicted mean the interval's upper end is (its width, the price of an honest interval)."""
import math
import os
import random
import statistics
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), "."]
os.environ["EB_KERNEL"] = "v4"  # so variants patches kernel_parts (it reads every variant's kernel)
import variants  # noqa: E402,F401
from edgebench.search import surrogate  # noqa: E402
from edgebench.search.space import Encoder, SearchPoint  # noqa: E402

PRECISIONS = ("fp32", "tf32", "fp16", "amp")
BATCHES = (1, 2, 4, 8, 16, 32, 64)
INSTANCES = (1, 2, 4)


def truth(prec, b, n):
    lb, li = math.log2(b), math.log2(n)
    if prec in ("fp16", "amp"):  # the fast pair: throughput grows with batch well past b16
        return 7.0 + 0.45 * lb - 0.02 * lb * lb + 0.10 * li + (0.03 if prec == "amp" else 0.0)
    return 7.2 + 0.20 * lb - 0.015 * lb * lb + 0.05 * li - (0.05 if prec == "fp32" else 0.0)


def point(prec, b, n):
    key = f"{prec}-b{b}-{n}x"
    return SearchPoint(key, "m", key, b, n, {"precision": prec}, [key])


def draw(rng, kernel):
    space = [point(p, b, n) for p in PRECISIONS for b in BATCHES for n in INSTANCES]
    enc = Encoder(space)
    others = [p for p in space if p.categories["precision"] != "amp"]
    amp = [p for p in space if p.categories["precision"] == "amp"]
    train = rng.sample(others, 12) + [rng.choice(amp)]
    ys = [math.exp(truth(p.categories["precision"], p.batch, p.instances) + rng.gauss(0, 0.02)) for p in train]
    os.environ["EB_KERNEL"] = kernel
    fitted = surrogate.fit("throughput_ips", "gp", enc, train, ys, seed=0)
    test = [p for p in amp if p.key != train[-1].key]
    mus, sds = fitted.predict(test)
    out = [0, 0, 0, []]  # inside, beyond the upper end, beyond the lower end; the intervals' upper ends
    for p, mu, sd in zip(test, mus, sds):
        t = truth("amp", p.batch, p.instances)
        out[0 if abs(t - mu) <= 1.96 * sd else 1 if t > mu else 2] += 1
        out[3].append(math.exp(1.96 * sd) - 1)
    return out


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    for kernel in ("v0", "v4", "v5"):
        tot = [0, 0, 0, []]
        rng = random.Random(0)  # the same draws for every kernel
        for _ in range(n):
            tot = [a + b for a, b in zip(tot, draw(rng, kernel))]
        s = sum(tot[:3])
        print(f"{kernel}: {n} draws, {s} unmeasured amp configurations: {tot[0] / s:.1%} inside the 95% interval, "
              f"{tot[1] / s:.1%} above it (under-predicted: the miss that hides a better amp), {tot[2] / s:.1%} below; "
              f"upper end over the predicted mean: median +{statistics.median(tot[3]):.0%}")


if __name__ == "__main__":
    main()
