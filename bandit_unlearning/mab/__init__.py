"""Paper A: (eps, delta)-unlearning for offline stochastic multi-armed bandits."""
