"""The requester's portal: the home page, the task lists (a requester's own tasks; all
tasks for reviewers, the same page in another scope) and the form that creates a task.

A task's own page, its decisions and the review queue are ``evidence_app.review``'s; the
tasks API is ``tasks_app.api``'s. Both the portal's form and the API create a task through
the one domain operation, ``tasks_app.actions.task_create``.
"""
