"""Paper B's generic framework: the binary tree mechanism, prefix-sum learners and their exact
unlearning by maximal coupling (Algorithms 1-3, Theorem 3.3)."""
