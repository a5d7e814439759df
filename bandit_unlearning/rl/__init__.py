"""Paper B's RL instance: episodic tabular MDPs, UCB-VI and TV-stable UCB-VI (Algorithm 4)."""
