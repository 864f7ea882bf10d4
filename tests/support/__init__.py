"""Shared test support: parity-vector loading and comparison, fake servers."""
