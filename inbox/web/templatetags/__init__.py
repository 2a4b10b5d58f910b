"""Template tags and filters of the web UI's templates (`{% load inbox_ui %}` and the rest).

Presentation only: labels (from the core's closed sets, such as `HandoffReason`), times in the
business's zone, fragments. Imports the core and the web UI's selectors, nothing above them.
"""
