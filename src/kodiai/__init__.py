"""Kodiai: a self-hosted GitHub App that reviews pull requests with Claude and learns from past findings."""

__version__ = "0.1.0"
