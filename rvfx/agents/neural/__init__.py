"""Neural value functions: the NumPy MLP ensemble, network inputs, ensemble RLSVI and DQN."""
