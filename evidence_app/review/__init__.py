"""The review side: the task page, the review queue, decisions and claim labels, the trace
tree, and the blind audit pages. The task lists and the new-task form are
``evidence_app.portal``'s."""
