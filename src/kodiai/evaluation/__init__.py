"""Retrieval-quality evaluation: labelled data → real memory store → real chain → metrics per cut strategy.

``kodiai eval retrieval`` and ``kodiai memory calibrate`` are thin shells over this package.
"""
