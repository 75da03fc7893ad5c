"""Tabular agents of a layered MDP: RLSVI, PSRL, UCRL2 and the learners that know deep sea's structure."""
