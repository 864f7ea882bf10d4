"""The operator dashboard under ``/dashboard`` (issue 28): is the learned memory helping, why did a review
stay quiet, what is the queue doing. Server-rendered, read-only SQL over the stores, GitHub sign-in."""
