"""The review side: the task pages, the review queue, decisions and claim labels, the trace
tree, and the blind audit pages."""
