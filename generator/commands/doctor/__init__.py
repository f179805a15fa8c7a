"""``tasgen doctor``: whether a live cluster is set up the way the render needs, read-only
(docs/explanation/doctor.md)."""
