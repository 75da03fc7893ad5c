"""Running experiments: specs and their parameters, the runner, result shards and tables."""
