"""The walk: abstract values pushed through each graph in order by one transfer per op.

``context`` (options, scopes, the table's types and the surface a transfer sees), ``facts``
(abstract values and reasons), ``edits`` (every change to the graph; the only place that
knows about dry runs), ``walker`` (the order of the walk; it is given its table).
"""
