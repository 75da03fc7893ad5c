"""The core of rvfx: Algorithm 1's two interfaces, the one `live` loop, backward induction.

Imports nothing else of rvfx; every other layer builds on it.
"""
