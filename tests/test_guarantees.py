"""The guarantee matrix (chapter P2): the audit holds for the package's paths and rejects broken ones."""

import numpy as np
import pytest

from bandit_unlearning.experiments.guarantees import (
    KINDS,
    AuditRow,
    Setting,
    TOLERANCE,
    audit_setting,
    audit_variants,
    competitor_means,
    matrix_settings,
    released_arm_distributions,
    summarize,
    worst_case_instance,
)
from bandit_unlearning.mab.unlearn import multi_noisy_argmax_distribution, UnlearnOptions
from bandit_unlearning.protocol import unlearn


@pytest.mark.parametrize("path, l", [("gaussian", 1), ("adaptive", 1), ("gaussian", 4), ("adaptive", 8)])
def test_correct_paths_hold_and_half_noise_fails(path, l):
    eps = 0.5 if path == "gaussian" else 20.0  # Algorithm 2 noises only when gamma < gamma0
    s = Setting(path, l, 400 if l > 1 else 40, 20 if l > 1 else 4, eps, 1e-2, "analytic", "exact")
    row = audit_setting(s)
    assert row.refused is None and row.noised
    assert 0.999 < row.ratio <= 1 + TOLERANCE  # analytic + exact sensitivity: tight
    assert row.delta_arm <= row.delta_scores + 1e-12
    assert audit_setting(s, "half noise", arm_audit=False).ratio > 1 + TOLERANCE


def test_per_arm_calibration_of_several_arms_is_caught():
    """The defect the matrix was built for: per-arm sigma on several noised arms under-noises."""
    for l in (4, 8, 16):
        s = Setting("gaussian", l, 1000, 20, 0.5, 1e-5, "analytic", "exact")
        assert audit_setting(s, arm_audit=False).ratio <= 1 + TOLERANCE
        assert audit_setting(s, "per-arm sigma", arm_audit=False).ratio > 10


def test_mixing_holds_and_rollback_and_imitation_are_exact():
    row = audit_setting(Setting("mixing", 1, 40, 4, 0.5, 1e-2, "analytic", "exact", eta=0.25))
    assert row.noised and row.ratio <= 1 + TOLERANCE
    for l in (1, 4):
        assert audit_setting(Setting("rollback", l, 400, 20, 0.5, 1e-2)).ratio == 0.0
        assert audit_setting(Setting("rollback", l, 400, 20, 0.5, 1e-2), "skipped rollback").ratio > 1
        assert audit_setting(Setting("imitation", l, 400, 20, 0.5, 1e-2)).ratio == 0.0
        assert audit_setting(Setting("imitation", l, 400, 20, 0.5, 1e-2), "forgets k").ratio > 1


def test_unproven_calibration_is_refused_and_recorded():
    for cal in ("paper", "classic"):
        row = audit_setting(Setting("gaussian", 1, 400, 40, 2.0, 1e-6, cal, "exact"))
        assert row.refused and "only proven for epsilon < 1" in row.refused and row.ratio == 0.0
    with pytest.raises(ValueError, match="calibration='analytic'"):
        UnlearnOptions("gaussian", epsilon=8.0, delta=1e-6, calibration="paper")


def test_paper_sensitivity_outside_lemma_a1_falls_back_to_rollback():
    row = audit_setting(Setting("gaussian", 1, 40, 38, 0.5, 1e-2, "analytic", "paper"))
    assert row.refused is None and row.fell_back and not row.noised
    assert row.ratio == 0.0 and row.ratio_literal == 0.0  # rollback: exact in both worlds


def test_paper_rule_holds_only_conditionally_and_the_literal_rule_holds_literally():
    for path, l, eta in (("adaptive", 1, None), ("adaptive", 4, None), ("mixing", 1, 0.25)):
        paper = audit_setting(
            Setting(path, l, 40 if l == 1 else 400, 4 if l == 1 else 20, 20.0, 1e-2, eta=eta)
        )
        assert paper.noised and paper.ratio <= 1 + TOLERANCE and paper.ratio_literal > 1 + TOLERANCE
        lit = Setting(
            path, l, 40 if l == 1 else 400, 4 if l == 1 else 20, 20.0, 1e-2, eta=eta, reference="literal"
        )
        row = audit_setting(lit)
        assert row.noised and 0.99 < row.ratio_literal <= 1 + TOLERANCE and row.ratio <= 1 + TOLERANCE
        assert audit_setting(lit, "half noise", arm_audit=False).ratio_literal > 1 + TOLERANCE
    for path in ("gaussian", "rollback"):
        row = audit_setting(Setting(path, 2, 400, 20, 0.5, 1e-2))
        assert row.ratio_literal == row.ratio <= 1 + TOLERANCE


def test_worst_case_instance_matches_unlearn():
    """The audit's instance goes through the public unlearn unchanged (one noised arm at a0)."""
    state, request = worst_case_instance(400, 40, 1, KINDS[0], 0.05)
    assert state.arm == 0 and request.k == 40
    res = unlearn(
        state,
        request,
        options=UnlearnOptions(
            method="gaussian", epsilon=0.5, delta=1e-6, calibration="analytic", sensitivity="exact"
        ),
        rng=np.random.default_rng(0),
    )[1]
    assert res.branch == "gaussian" and res.sigma > 0


def test_summarize_counts_every_setting_once():
    settings = [s for s in matrix_settings() if s.n_sources == 1 and s.n == 40 and s.k == 2][:30]
    rows = [audit_setting(s, arm_audit=False) for s in settings]
    broken = [audit_setting(s, "half noise", arm_audit=False) for s in settings]
    table = summarize(rows, broken)
    assert sum(t["settings"] for t in table) == len(settings)
    assert all(t["worst"] <= 1 + TOLERANCE for t in table)


def test_bad_variant_is_refused():
    with pytest.raises(ValueError, match="variant must be one of"):
        audit_setting(Setting("gaussian", 1, 40, 2, 0.5, 1e-2), "quarter noise")
    with pytest.raises(ValueError, match="kind must be one of"):
        worst_case_instance(40, 2, 1, "deleted 2", 0.5)


def test_audit_quadrature_equals_the_public_adaptive_one():
    """The audit's fixed Gauss-Legendre rule against ``multi_noisy_argmax_distribution`` (adaptive quad):
    equal and unequal noise (crossings up to 100 times steeper than the normal density), ties among
    noiseless arms, no noiseless arm, one noised arm, scores far apart and near-equal."""
    rng = np.random.default_rng(20261201)
    worst = 0.0
    for trial in range(120):
        m = int(rng.integers(3, 12))
        sigmas = np.where(rng.random(m) < 0.6, rng.uniform(0.01, 1.0, m), 0.0)
        if trial % 3 == 0:
            sigmas = np.where(sigmas > 0, 0.2, 0.0)  # one sigma for every noised arm
        if trial % 10 == 1:
            sigmas = np.full(m, 0.3)  # no noiseless arm
        if (sigmas > 0).sum() < 2 and trial % 10 != 2:
            sigmas[:2] = 0.3
        rows = rng.normal(0, 0.5, (3, m)) * rng.choice([1e-3, 0.1, 1.0, 3.0])
        if trial % 7 == 0:
            rows[:, -2:] = rows[:, [-3]]  # ties (among noiseless arms too)
        public = np.array([multi_noisy_argmax_distribution(r, sigmas) for r in rows])
        worst = max(worst, float(np.max(np.abs(released_arm_distributions(rows, sigmas) - public))))
    assert worst <= 1e-12, worst


def _audit_setting_oracle(setting, variant="correct", n_grid=21, arm_audit=True):
    """``audit_setting`` as a plain loop: a fresh instance, fresh plans and fresh base scores for every
    group of competitor means (nothing shared between groups, kinds or the two worlds)."""
    from bandit_unlearning.experiments.guarantees import _bases, _imitation_row, _released_deltas
    from bandit_unlearning.mab.lcb import lcb_scores
    from bandit_unlearning.mab.mechanisms import rollback
    from bandit_unlearning.mab.unlearn import plan_unlearning

    if setting.path == "imitation":
        return _imitation_row(setting, variant)
    try:
        options = setting.options()
    except ValueError as err:
        return AuditRow(setting, variant, 0.0, 0.0, False, refused=str(err).split(";")[0])
    worst, any_noise, any_fallback = np.zeros(4), False, False
    means = competitor_means(setting, n_grid)

    def noise(plans):
        sig = np.zeros(setting.n_sources + 1)
        for p in plans:
            if p.noised:
                sig[p.arm] = p.delta_f * options.unit_sigma if variant == "per-arm sigma" else p.sigma
        return sig / 2 if variant == "half noise" else sig

    for kind in KINDS:
        probe, request = worst_case_instance(setting.n, setting.k, setting.n_sources, kind, 0.5)
        sums = np.tile(probe.reward_sums, (means.size, 1))
        sums[:, -1] = setting.n * means
        scores = lcb_scores(np.broadcast_to(probe.counts, sums.shape), sums, probe.tau)[2]
        scores_du = scores.copy()
        scores_du[:, :-1] = rollback(probe, request).scores[:-1]
        arms, arms_du = np.argmax(scores, axis=1), np.argmax(scores_du, axis=1)
        for learner_arm, literal_arm in sorted(set(zip(arms.tolist(), arms_du.tolist()))):
            group = (arms == learner_arm) & (arms_du == literal_arm)
            state = worst_case_instance(
                setting.n, setting.k, setting.n_sources, kind, float(means[group][0])
            )[0]
            deleted = request.deleted_counts(state.n_arms)
            try:
                plans, _ = plan_unlearning(learner_arm, state.counts, deleted, state.log_term, options)
                plans_l, _ = plan_unlearning(literal_arm, state.counts, deleted, state.log_term, options)
            except ValueError as err:
                return AuditRow(setting, variant, 0.0, 0.0, False, refused=str(err).split(";")[0])
            sig_u, sig_l = noise(plans), noise(plans_l)
            any_noise |= bool(np.any(sig_u > 0))
            any_fallback |= any(p.fell_back for p in plans)
            base_u, base_r = _bases(state, request, plans, skip_rollback=variant == "skipped rollback")
            competitor = scores[group, -1]
            rows_u, rows_r = np.tile(base_u, (competitor.size, 1)), np.tile(base_r, (competitor.size, 1))
            rows_u[:, -1], rows_r[:, -1] = competitor, competitor
            conditional = _released_deltas(rows_u, rows_r, sig_u, setting.epsilon, arm_audit)
            literal = (
                conditional
                if np.array_equal(sig_u, sig_l)
                else _released_deltas(rows_u, rows_r, sig_u, setting.epsilon, arm_audit, sigmas_r=sig_l)
            )
            worst = np.maximum(worst, conditional + literal)
    return AuditRow(
        setting,
        variant,
        float(worst[0]),
        float(worst[1]),
        any_noise,
        None,
        float(worst[2]),
        float(worst[3]),
        any_fallback,
    )


def test_audit_setting_equals_its_plain_loop_oracle_bit_for_bit():
    """Sharing plans, instances and base scores between groups, and between the variants of
    ``audit_variants``, changes no bit of any row."""
    settings = matrix_settings()
    multi = [s for s in settings if s.n_sources == 4 and s.epsilon == 2.0 and s.delta == 1e-2]
    sample = settings[::151] + [s for s in multi if s.calibration == "analytic"]
    assert {s.path for s in sample} == {"gaussian", "rollback", "adaptive", "mixing", "imitation"}
    for s in sample:
        variants = ("correct", "half noise", "per-arm sigma" if s.path == "gaussian" else "skipped rollback")
        for variant in variants:
            n_grid = 3 if s.n_sources > 1 and s.path == "gaussian" else 21
            row = _audit_setting_oracle(s, variant, n_grid)
            assert audit_setting(s, variant, n_grid) == row, (s, variant)
        # several variants in one pass: each row as audit_setting gives it alone
        pairs = [(variants[0], True), (variants[1], False), (variants[2], True), (variants[2], False)]
        assert audit_variants(s, pairs) == [audit_setting(s, v, 21, a) for v, a in pairs], s


def test_equal_noised_arms_share_one_quadrature_and_match_the_adaptive_one():
    """Noised arms with bit-identical integrals (several equal source arms) are evaluated once; the
    result still matches ``multi_noisy_argmax_distribution``, also when equal arms are not adjacent
    (their integrals then see the other arms in another order and are evaluated separately)."""
    rng = np.random.default_rng(7)
    for columns in ([0, 0, 0, 0, 1], [0, 1, 0, 2], [0, 0, 1, 1, 2]):
        values = rng.normal(0, 0.3, (4, max(columns) + 1))
        rows = values[:, columns]
        sigmas = np.where(np.arange(len(columns)) < len(columns) - 1, 0.25, 0.0)
        got = released_arm_distributions(rows, sigmas)
        public = np.array([multi_noisy_argmax_distribution(r, sigmas) for r in rows])
        assert np.max(np.abs(got - public)) <= 1e-12
        for i, j in zip(*np.triu_indices(len(columns) - 1, 1)):
            if columns[i] == columns[j]:
                assert np.allclose(got[:, i], got[:, j], rtol=0, atol=1e-15)
