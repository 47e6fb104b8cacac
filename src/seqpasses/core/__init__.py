"""The core: the abstract value of a sequence and the tools every rewrite uses.

``sequence`` (the values and ONNX's position rules), ``dims`` (dim arithmetic), ``constants``
(what a value holds before run time), ``shapes`` (shapes on demand), ``emit`` (opset-aware
builders), ``graph`` (domains, traversal, paths, node surgery). Nothing here knows the walk.
"""
