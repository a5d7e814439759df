"""Paper reproductions: protocols, runners and plots (see ``python -m bandit_unlearning --help``)."""
