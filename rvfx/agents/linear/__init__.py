"""Linear value functions: Bayesian linear regression (eqs. 5.3-5.4) and linear RLSVI."""
