"""Report: the seed 000 §7.3 record template, charts and the decision, in Markdown and HTML."""
