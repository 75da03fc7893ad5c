"""Statistics the figures and the report share: censored medians, bootstrap CIs, slopes, growth fits."""
