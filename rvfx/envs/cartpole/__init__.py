"""Cartpole swing-up (Section 7.2.2): dynamics, a reference controller, greedy rollouts, drawing."""
