"""findings.comment_id / comment_surface / review_output_key, added when missing.

The original added these columns itself, so a file it created usually has them already.
"""

from kodiai.storage.additive import AddColumn, add_column_steps

steps = add_column_steps(
    AddColumn("findings", "comment_id", "INTEGER"),
    AddColumn("findings", "comment_surface", "TEXT"),
    AddColumn("findings", "review_output_key", "TEXT"),
)
