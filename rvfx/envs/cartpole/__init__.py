"""Cartpole swing-up (Section 7.2.2): physics, the environments, a reference controller, greedy rollouts."""
