"""Privacy tools: Gaussian mechanism calibration (classic and analytic), privacy profiles, exact
and Monte Carlo audits, and couplings of Gaussians (TV distance, maximal coupling)."""
