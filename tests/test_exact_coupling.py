"""Unit and bad-input tests of bandit_unlearning.privacy.coupling (chapter B1)."""

import warnings

import numpy as np
import pytest
from scipy import stats

from bandit_unlearning.privacy.coupling import (
    check_sigma,
    coupling_log_ratio,
    reflection_coupling,
    tv_gaussians,
)


def test_tv_closed_form_values():
    assert tv_gaussians([0.0], [0.0], 1.0) == 0.0
    assert tv_gaussians([0.0], [2.0], 1.0) == pytest.approx(2 * stats.norm.cdf(1.0) - 1, abs=1e-15)
    assert tv_gaussians([0.0, 0.0], [3.0, 4.0], 2.5) == pytest.approx(2 * stats.norm.cdf(1.0) - 1)
    batch = tv_gaussians(np.zeros((4, 3)), np.eye(4, 3), 1.0)
    assert batch.shape == (4,) and batch[3] == 0.0


def test_sigma_zero_is_point_masses():
    assert tv_gaussians([1.0, 2.0], [1.0, 2.0], 0.0) == 0.0
    assert tv_gaussians([1.0, 2.0], [1.0, 2.5], 0.0) == 1.0
    rng = np.random.default_rng(0)
    y, kept = reflection_coupling([1.0, 2.0], [1.0, 2.0], [1.0, 2.5], 0.0, rng)
    assert not kept and np.array_equal(y, [1.0, 2.5])
    y, kept = reflection_coupling([1.0, 2.0], [1.0, 2.0], [1.0, 2.0], 0.0, rng)
    assert kept and np.array_equal(y, [1.0, 2.0])


def test_coupling_shapes_and_reflection_identity():
    rng = np.random.default_rng(1)
    mu1, mu2 = np.zeros(5), np.full(5, 0.3)
    x = mu1 + rng.normal(size=(1000, 5))
    y, kept = reflection_coupling(x, mu1, mu2, 1.0, rng)
    assert y.shape == x.shape and kept.shape == (1000,) and kept.dtype == bool
    assert np.array_equal(y[kept], x[kept])
    np.testing.assert_allclose(y[~kept] + x[~kept], np.broadcast_to(mu1 + mu2, x[~kept].shape))
    # kept exactly when the uniform falls below the density ratio: never kept where q/p -> 0
    far = np.full((1, 5), -50.0)
    assert not reflection_coupling(far, mu1, mu2, 1.0, rng)[1][0]
    # equal means: always kept, nothing changes
    y, kept = reflection_coupling(x, mu1, mu1, 1.0, rng)
    assert kept.all() and np.array_equal(y, x)


def test_single_point_returns_bool():
    y, kept = reflection_coupling([0.1, 0.2], [0.0, 0.0], [0.5, 0.5], 1.0, np.random.default_rng(2))
    assert isinstance(kept, bool) and y.shape == (2,)


def test_log_ratio_matches_scipy():
    rng = np.random.default_rng(3)
    x, mu1, mu2 = rng.normal(size=(3, 4))
    ref = stats.multivariate_normal(mu2, 0.49).logpdf(x) - stats.multivariate_normal(mu1, 0.49).logpdf(x)
    assert coupling_log_ratio(x, mu1, mu2, 0.7) == pytest.approx(ref, rel=1e-10)


def test_change_probability_is_tv():
    rng = np.random.default_rng(4)
    mu1, mu2 = np.zeros(3), np.array([0.5, 0.0, 0.0])
    n = 200_000
    _, kept = reflection_coupling(rng.normal(size=(n, 3)), mu1, mu2, 1.0, rng)
    p = stats.binomtest(int((~kept).sum()), n, tv_gaussians(mu1, mu2, 1.0)).pvalue
    assert p > 1e-6


@pytest.mark.parametrize("sigma", [-1.0, np.nan, np.inf])
def test_bad_sigma(sigma):
    with pytest.raises(ValueError, match="sigma"):
        tv_gaussians([0.0], [1.0], sigma)
    with pytest.raises(ValueError, match="sigma"):
        reflection_coupling([0.0], [0.0], [1.0], sigma, np.random.default_rng(0))


def test_bad_types_and_values():
    with pytest.raises(TypeError):
        check_sigma("1")
    with pytest.raises(ValueError, match="mu1"):
        tv_gaussians([np.nan], [1.0], 1.0)
    with pytest.raises(ValueError, match="x"):
        reflection_coupling(np.float64(1.0), [0.0], [1.0], 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError):
        reflection_coupling(np.zeros((2, 3)), np.zeros(4), np.zeros(4), 1.0, np.random.default_rng(0))


def test_inputs_not_modified():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(10, 2))
    mu1, mu2 = np.zeros(2), np.ones(2)
    copies = [a.copy() for a in (x, mu1, mu2)]
    reflection_coupling(x, mu1, mu2, 1.0, rng)
    for a, b in zip((x, mu1, mu2), copies):
        assert np.array_equal(a, b)


def test_log_ratio_at_an_underflowing_sigma_is_its_limit_not_nan():
    # 2 sigma^2 underflows to 0 at sigma = 5e-324: an equidistant point must give 0, not 0/0
    x, mu1, mu2 = np.full(2, 0.5), np.zeros(2), np.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert coupling_log_ratio(x, mu1, mu2, 5e-324) == 0.0
        assert coupling_log_ratio(np.zeros(2), mu1, mu2, 5e-324) == -np.inf
        assert coupling_log_ratio(np.zeros(2), mu1, mu2, 1e-160) == -np.inf
    assert coupling_log_ratio(np.zeros(2), mu1, mu2, 0.7) == pytest.approx(-2 / (2 * 0.49))
