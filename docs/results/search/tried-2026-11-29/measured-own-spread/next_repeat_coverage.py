"""(A record of a tried change, run from the repository root with its change.diff applied: `new` is the fit's own
spread for a measured configuration, `old` the search's rule as kept, the leave-one-out floor too.)

Coverage of the next repeat of a measured configuration: train on repeat 0 of a random share (20%, 35%; 8 draws
each) of a grid's configurations, as a search mostly has them, and score each trained configuration's other
repeats against the 95% interval the fit gives its next row: inside, and beyond the end better for an answer."""
import random
import sys

sys.path.insert(0, ".")
sys.path.insert(0, "benchmarks")

from search_eval import GRIDS, HIGHER_IS_BETTER, _grid  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from edgebench.search.decide import Z95  # noqa: E402
from edgebench.search.space import Encoder  # noqa: E402
from edgebench.search.surrogate import fit, min_sd, transform  # noqa: E402

threadpool_limits(1)
grids = dict(GRIDS)
grids["h200-refgrid"] = "docs/results/search/refgrid/results.csv"
for name in ("h100-torch", "cpu-small_cnn", "h200-refgrid"):
    points, grid, _live = _grid(grids[name])
    enc = Encoder(points)
    for col in ("throughput_ips", "latency_ms_p90", "energy_per_inference_mj", "power_w_mean"):
        res = {"new": [0, 0, 0], "old": [0, 0, 0]}
        for share in (0.2, 0.35):
            for trial in range(8):
                train = random.Random(trial).sample(points, max(4, round(share * len(points))))
                xs, ys, held = [], [], []
                for p in train:
                    rows = [grid[h] for h in p.hashes if h in grid]
                    ok = [r for r in rows if r.get("status") == "ok" and r.get(col) not in (None, "")]
                    if not ok:
                        continue
                    xs.append(p)
                    ys.append(float(ok[0][col]))
                    held += [(p, float(r[col])) for r in ok[1:]]
                f = fit(col, "gp", enc, xs, ys, trial)
                if f is None or not held:
                    continue
                mus, sds = f.predict([p for p, _ in held])
                floor = max(min_sd(col), f.sd_floor)
                for (_p, v), mu, sd in zip(held, mus, sds):
                    t = transform(col, v)
                    for k, s in (("new", sd), ("old", max(sd, floor))):
                        z = (t - mu) / s
                        c = res[k]
                        c[0] += abs(z) <= Z95
                        c[1] += 1
                        c[2] += (z > Z95) if col in HIGHER_IS_BETTER else (z < -Z95)
        if not res["new"][1]:
            continue
        print(name, col, " ".join(f"{k}: {c[0] / c[1]:.1%} inside, {c[2] / c[1]:.1%} better-end (n={c[1]})"
                                  for k, c in res.items()), flush=True)
