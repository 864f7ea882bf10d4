"""retrieval_quality.threshold_method (adaptive / percentile / configured), added when missing.

The original added this column itself at cd3cee39, so a file it created may already have it.
"""

from kodiai.storage.additive import AddColumn, add_column_steps

steps = add_column_steps(AddColumn("retrieval_quality", "threshold_method", "TEXT"))
