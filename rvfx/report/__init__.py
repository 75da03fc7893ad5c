"""`rvfx report`: every claim of claims.yaml as a verdict computed from the result tables.

A claim names a table (a CSV under RESULTS/<experiment>/, a table derived from one, or one computed
without an experiment), filters and groups its rows, estimates one statistic with a 95% interval per
group, and applies the rule of its kind (constants in claims.yaml's `rules`): holds, differs or
inconclusive. An amended claim is judged as it stands and as first committed; a claim `beyond` the
paper is rvfx's own measurement and another `reading` of a claim is shown under it, neither counted
among the paper's verdicts. The verdicts go to report.md and a self-contained report.html, with the
experiments run under settings other than their spec's; a README may quote any claim between
`<!-- report:begin ID -->` and `<!-- report:end -->`, and `check` names every place where those
files or blocks differ from a recomputation.

One idea per module, each importing only modules listed before it:
  folder      one results folder as a command reads it: each table and spec.yaml read once, and kept
  settings    how each experiment folder was run: its scale, and settings other than its shipped spec's
  grammar     claims.yaml's conditions (where, criterion, set), parsed and evaluated on a table, never run
  tables      the tables a claim reads (as written, derived or computed), and its row filters
  statistics  the statistics a claim estimates, each an Estimate with its 95% interval
  rules       the verdict rules: an estimate, or an order of estimates, against claims.yaml's constants
  registry    claims.yaml read and checked (RegistryError), and the versions of an amended claim
  claims      a claim evaluated on the result tables: a Row per group, an Outcome per claim (and version 1)
  render      the outcomes as Markdown (report.md, the README's blocks) and as report.html
  readme      the files: the report written and checked, the README's blocks and stray numbers
  export      the tables the claims read, copied as a results folder to commit (`rvfx export`)
"""
