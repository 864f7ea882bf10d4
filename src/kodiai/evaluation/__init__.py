"""Offline retrieval-quality evaluation: labelled data → real memory store → real chain → metrics per cut
strategy, leave-one-repository-out, and calibration of the cut's constants.

``kodiai eval`` and ``kodiai memory calibrate`` are thin shells over this package. It sits beside the
runtime, not inside it: the server and the review never import it (the import-linter layers contract).
"""
