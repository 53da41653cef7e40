"""search.surrogate: each kind models a log-linear metric of batch and instances well enough to rank unmeasured
configurations (held-out points within a tolerance, their 95% intervals covering most of them); the accuracy drop
(percentage points, 0 or negative allowed) is modelled as it is, not in log space."""

from __future__ import annotations

import math
import random

import pytest

from edgebench.errors import EdgebenchError
from edgebench.search.space import Encoder, make_point
from edgebench.search.surrogate import MIN_SD_LOG, SURROGATES, fit, inverse, transform

pytest.importorskip("sklearn", reason="the search's surrogates need scikit-learn (pip install 'edgebench[search]')")

BATCHES = (1, 2, 4, 8, 16, 32, 64)
INSTANCES = (1, 2, 4)


def _points(precisions=("fp32",)):
    out = []
    for prec in precisions:
        for b in BATCHES:
            for i in INSTANCES:
                out.append(make_point({"model": "net", "backend": "null", "precision": prec, "batch": b,
                                       "instances": i, "mode": "process", "placement": "+".join(["cpu"] * i)},
                                      [f"{prec}b{b}i{i}r0"]))
    return out


def _throughput(p) -> float:
    """Log-linear: 120 x batch^0.8 x instances^0.9 (x2.5 for int8)."""
    return 120.0 * p.batch ** 0.8 * p.instances ** 0.9 * (2.5 if p.categories["precision"] == "int8" else 1.0)


def _split(points):
    """Every third point held out; the outermost batches and instance counts stay in the training set (the test
    is interpolation, as in a grid the seeds spread over)."""
    held = [p for k, p in enumerate(points) if k % 3 == 1 and p.batch not in (1, 64) and p.instances != 4]
    return [p for p in points if p not in held], held


@pytest.mark.parametrize("kind", SURROGATES)
def test_each_kind_predicts_held_out_points_of_a_log_linear_metric(kind):
    points = _points(("fp32", "int8"))
    train, held = _split(points)
    assert len(held) >= 6
    rng = random.Random(0)
    values = [_throughput(p) * math.exp(rng.gauss(0.0, 0.02)) for p in train]  # 2% run-to-run noise
    fitted = fit("throughput_ips", kind, Encoder(points), train, values, seed=0)
    assert fitted is not None and fitted.n == len(train) and fitted.kind == kind
    mus, sds = fitted.predict(held)
    covered = 0
    for p, mu, sd in zip(held, mus, sds):
        true = _throughput(p)
        assert sd >= MIN_SD_LOG
        assert abs(inverse("throughput_ips", mu) - true) / true < 0.15, (p.label, inverse("throughput_ips", mu), true)
        lo, hi = inverse("throughput_ips", mu - 1.96 * sd), inverse("throughput_ips", mu + 1.96 * sd)
        covered += lo <= true <= hi
    assert covered >= 0.8 * len(held), f"{covered} of {len(held)} held-out points inside their 95% interval"
    # it separates what matters: int8 predicted faster than fp32 at every held-out fp32 point's configuration
    twins = {(p.batch, p.instances): p for p in points if p.categories["precision"] == "int8"}
    fp32 = [p for p in held if p.categories["precision"] == "fp32"]
    m32, _ = fitted.predict(fp32)
    m8, _ = fitted.predict([twins[(p.batch, p.instances)] for p in fp32])
    assert all(b > a for a, b in zip(m32, m8))


def test_the_accuracy_drop_is_modelled_linearly():
    assert transform("accuracy_drop_pct", -0.5) == -0.5 and transform("accuracy_drop_pct", 0.0) == 0.0
    assert inverse("accuracy_drop_pct", 1.25) == 1.25
    assert transform("throughput_ips", math.e) == pytest.approx(1.0) and inverse("throughput_ips", 0.0) == 1.0
    assert transform("throughput_ips", 0.0) is None and transform("latency_ms_p99", -1.0) is None

    points = _points()
    train, held = _split(points)
    drop = {p.key: 0.4 * math.log2(p.batch) - 0.5 for p in points}  # -0.5 .. 1.9 pp: zero crossing, negatives
    values = [drop[p.key] for p in train]
    assert any(v < 0 for v in values)
    for kind in SURROGATES:
        fitted = fit("accuracy_drop_pct", kind, Encoder(points), train, values)
        assert fitted is not None and fitted.n == len(train)  # no value is dropped: none needs to be positive
        mus, _sds = fitted.predict(held)
        for p, mu in zip(held, mus):
            assert inverse("accuracy_drop_pct", mu) == pytest.approx(drop[p.key], abs=0.25), (kind, p.label)
    # a log metric leaves out what has no log (a zero throughput) and needs two values
    assert fit("throughput_ips", "loglinear", Encoder(points), train[:3], [0.0, 10.0, 20.0]).n == 2
    assert fit("throughput_ips", "loglinear", Encoder(points), train[:2], [0.0, 10.0]) is None


def test_an_unknown_kind_is_an_error():
    points = _points()
    with pytest.raises(EdgebenchError, match="unknown 'forest'"):
        fit("throughput_ips", "forest", Encoder(points), points[:3], [1.0, 2.0, 3.0])


def test_a_gp_never_claims_to_know_a_rough_metric_better_than_it_misses_its_own_rows():
    """Throughput that jumps by 2x between neighbouring batches: the fit misses its own rows when each is left out,
    and no prediction's spread is below half the root mean square of those misses (surrogate.LOO_FLOOR)."""
    from edgebench.search.surrogate import LOO_FLOOR

    points = _points(("fp32",))
    train = [p for p in points if p.instances == 1]
    values = [_throughput(p) * (2.0 if p.batch in (4, 32) else 1.0) for p in train]
    fitted = fit("throughput_ips", "gp", Encoder(points), train, values, seed=0)
    assert fitted is not None and fitted.sd_floor > MIN_SD_LOG
    assert LOO_FLOOR > 0
    _mus, sds = fitted.predict(points)
    assert min(sds) >= fitted.sd_floor
    smooth = fit("throughput_ips", "gp", Encoder(points), train, [_throughput(p) for p in train], seed=0)
    assert smooth is not None and smooth.sd_floor < fitted.sd_floor


@pytest.mark.parametrize("kind", SURROGATES)
def test_the_cross_validated_widening_applies_to_unmeasured_configurations_only(kind):
    """A metric the model cannot express (a 2x jump at two batches): the refits miss the held-out folds by more than
    their spread, so cv_scale > 1 (more than for the same points without the jump), and it multiplies the model's
    own spread of every configuration not fitted on, before the floors; the fitted ones keep the spread the fit
    gives them (their next row is judged by their own rows and the noise)."""
    import numpy as np

    from edgebench.search.surrogate import _features

    points = _points(("fp32",))
    train = [p for p in points if p.instances in (1, 4)]
    values = [_throughput(p) * (2.0 if p.batch in (4, 32) else 1.0) for p in train]
    enc = Encoder(points)
    widened = fit("throughput_ips", kind, enc, train, values, seed=0)
    alone = fit("throughput_ips", kind, enc, train, values, seed=0, widen=False)
    smooth = fit("throughput_ips", kind, enc, train, [_throughput(p) for p in train], seed=0)
    assert widened is not None and alone is not None and smooth is not None
    # seeded: gp 1.37, loglinear 1.43; the same points without the jump: lower
    assert widened.sd_scale > 1.2 and smooth.sd_scale < widened.sd_scale, (widened.sd_scale, smooth.sd_scale)
    assert widened.trained == frozenset(p.key for p in train)
    _mu, sd_w = widened.predict(points)
    _mu, raw = widened.model.predict(np.array([_features(kind, enc, p) for p in points]), return_std=True)
    floor = max(MIN_SD_LOG, widened.sd_floor)
    unmeasured = 0
    for p, w, r in zip(points, sd_w, raw):
        if p in train:
            assert w == pytest.approx(max(r, floor)), p.label
        else:
            unmeasured += 1
            assert w == pytest.approx(max(r * widened.sd_scale, floor)) and w > max(r, floor), p.label
    assert unmeasured == len(points) - len(train) > 0


def test_cv_scale_is_near_1_where_the_model_holds():
    """On a log-linear metric with 2% Gaussian noise, 3 repeats of every configuration, the cross-validated misses
    are within the spread the refits give: the scale stays near 1 (seeded: 1.0), not inflated."""
    points = _points(("fp32", "int8"))
    rng = random.Random(1)
    train = [p for p in points for _repeat in range(3)]
    values = [_throughput(p) * math.exp(rng.gauss(0.0, 0.02)) for p in train]
    fitted = fit("throughput_ips", "gp", Encoder(points), train, values, seed=0)
    assert fitted is not None and fitted.sd_scale < 1.1, fitted.sd_scale


class _Spy:
    """Wraps a model: records the configurations (by feature row) each refit trains on and predicts."""

    def __init__(self, model, calls):
        self.model, self.calls = model, calls

    def fit(self, X, y):
        self.calls.append({"train": {tuple(x) for x in X}, "train_rows": len(y)})
        self.model.fit(X, y)
        return self

    def predict(self, X, return_std=False):
        self.calls[-1].update(held={tuple(x) for x in X}, held_rows=len(X))
        return self.model.predict(X, return_std=return_std)


def test_cv_scale_never_trains_on_what_it_scores_and_keeps_to_its_row_cap(monkeypatch):
    """Each refit predicts only configurations it was not trained on (a leak would pull the scale to 1), every
    configuration is held out once, and with more rows than CV_MAX_ROWS the refits see whole configurations whose
    rows, trained and held out together, stay within it; fewer than 3 configurations give 1 with no refit."""
    import numpy as np

    import edgebench.search.surrogate as surrogate

    calls: list[dict] = []
    real = surrogate._model
    monkeypatch.setattr(surrogate, "_model", lambda *a: _Spy(real(*a), calls))
    points = _points(("fp32",))
    rows = [p for p in points for _repeat in range(2)]  # 21 configurations x 2 repeats = 42 rows
    X = np.array([[math.log2(p.batch), math.log2(p.instances)] for p in rows])
    y = np.log(np.array([_throughput(p) for p in rows]))
    keys = [p.key for p in rows]
    surrogate.cv_scale("loglinear", X, y, keys, seed=0)
    assert len(calls) == surrogate.CV_FOLDS
    for c in calls:
        assert not (c["train"] & c["held"]) and c["held"] and len(c["train"]) >= 2, c
    held_all = [x for c in calls for x in c["held"]]
    assert len(held_all) == len(set(held_all)) == len(points)  # each configuration held out exactly once

    calls.clear()
    monkeypatch.setattr(surrogate, "CV_MAX_ROWS", 20)
    surrogate.cv_scale("loglinear", X, y, keys, seed=0)
    assert calls and all(c["train_rows"] + c["held_rows"] <= 20 for c in calls), calls
    assert len({x for c in calls for x in c["held"]}) == 10  # 10 whole configurations of 2 rows

    calls.clear()
    two = [k for k in keys if k in set(keys[:4])]
    assert surrogate.cv_scale("loglinear", X[:4], y[:4], two, seed=0) == 1.0 and not calls
